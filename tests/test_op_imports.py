"""Graphs that call a library's or a user module's own operators (``torch.ops.<ns>.<op>``, as
transformers' MoE layers do): the rendered task imports what registers them, so the verifier's
fresh processes can run the graph; an operator only the running script registers is a clear
fallback."""
import subprocess
import sys
import textwrap

import pytest
import torch

from torch_cudal1.graph.op_imports import OpNotImportable, import_lines

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

OPS_MODULE = '''
import torch


@torch.library.custom_op("cudal1_testops::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)
'''

USER = '''
import torch
import torch_cudal1
import cudal1_testops


class M(torch.nn.Module):
    def forward(self, x):
        return torch.ops.cudal1_testops.twice(x.sin()) + 1


m, x = M().eval(), torch.randn(4, 8)
with torch.no_grad():
    y = torch.compile(m, backend="cudal1", options={"baselines": "eager", "rounds": 0,
                                                   "trials": 1})(x)
assert torch.equal(y, m(x))
print(torch_cudal1.stats())
'''


def test_a_module_s_custom_operator_is_searched_and_then_served_from_the_cache(tmp_path):
    """The operator's module lives in the user's project folder (on the user's path only): it is
    searched (not a fallback), cached, and a second process is served from the cache."""
    project = tmp_path / "project"
    (project / "cudal1_testops").mkdir(parents=True)
    (project / "cudal1_testops" / "__init__.py").write_text(OPS_MODULE)
    (project / "user.py").write_text(USER)
    env = {**__import__("os").environ, "CUDAL1_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "user.py"], cwd=project, env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    stats = first.stdout.strip().splitlines()[-1]
    assert "'searches': 1" in stats and "fallback" not in stats, (stats, first.stderr[-3000:])
    second = subprocess.run([sys.executable, "user.py"], cwd=project, env=env, capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0 and "'cache_hits': 1" in second.stdout, second.stderr[-3000:]


def test_an_operator_only_the_running_script_registers_is_named_in_the_reason():
    def three(x: torch.Tensor) -> torch.Tensor:
        return x * 3
    three.__module__ = "__main__"
    op = torch.library.custom_op("cudal1_testmain::three", three, mutates_args=())
    op.register_fake(lambda x: torch.empty_like(x))
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.cudal1_testmain.three(x) + 1)
    try:
        import_lines(gm)
    except OpNotImportable as e:
        assert "torch.ops.cudal1_testmain.three" in str(e) and "__main__" in str(e)
    else:
        raise AssertionError("an operator of __main__ cannot be imported elsewhere")
    plain = torch.fx.symbolic_trace(lambda x: torch.ops.aten.sin(x) + 1)
    assert import_lines(plain) == ""
