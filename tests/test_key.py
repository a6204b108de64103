"""Cache keys: stable across processes, blind to names, sensitive to what changes results."""
import pytest
import torch
import torch.nn as nn

from helpers import run_python
from torch_cudal1.cache.key import cache_key, input_metadata, key_fields

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

KEY_SCRIPT = """
import json, torch, torch.nn as nn
import torch_cudal1.counters as rt
class {cls}(nn.Module):
    def __init__(self):
        super().__init__()
        self.{attr} = nn.Linear(8, 8)
    def forward(self, {var}):
        {tmp} = self.{attr}({var})
        return torch.relu({tmp}) * 2
torch.manual_seed(0)
m = {cls}().eval()
with torch.no_grad():
    torch.compile(m, backend="cudal1", options={{"mode": "cache-only"}})(torch.randn({shape}))
print(json.dumps({{"keys": [k["key"] for k in rt.SEEN_KEYS], "graphs": [k["graph"] for k in rt.SEEN_KEYS]}}))
"""


def _keys(cache_dir, seed="0", **names):
    params = {"cls": "Net", "attr": "proj", "var": "x", "tmp": "h", "shape": "4, 8"}
    params.update(names)
    return run_python(KEY_SCRIPT.format(**params),
                      env={"PYTHONHASHSEED": seed, "CUDAL1_CACHE_DIR": str(cache_dir)})


def test_key_is_equal_in_fresh_processes_and_blind_to_names(tmp_path):
    a = _keys(tmp_path, seed="1")
    b = _keys(tmp_path, seed="2")
    renamed = _keys(tmp_path, seed="3", cls="Other", attr="dense", var="inp", tmp="z")
    assert a["keys"] and a["keys"] == b["keys"] == renamed["keys"]
    assert a["graphs"] == renamed["graphs"]


def test_key_changes_with_shape(tmp_path):
    assert _keys(tmp_path)["keys"] != _keys(tmp_path, shape="5, 8")["keys"]


def _fields(x):
    return key_fields("g" * 64, input_metadata([x]), "cpu")


def test_key_changes_with_dtype_stride_device_and_flags():
    x = torch.randn(4, 8)
    base = cache_key(_fields(x))
    assert cache_key(_fields(x.double())) != base
    assert cache_key(_fields(x.t())) != base                               # stride
    assert cache_key(key_fields("g" * 64, input_metadata([x]), "meta")) != base  # device
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high" if old != "high" else "highest")
        assert cache_key(_fields(x)) != base                               # numerics flag
    finally:
        torch.set_float32_matmul_precision(old)
    torch.use_deterministic_algorithms(True)
    try:
        assert cache_key(_fields(x)) != base
    finally:
        torch.use_deterministic_algorithms(False)
    assert cache_key(_fields(x)) == base
    # a winner found where TF32 products were allowed must not serve where they are not
    assert cache_key(key_fields("g" * 64, input_metadata([x]), "cpu", tf32="off")) != base
    assert cache_key(key_fields("g" * 64, input_metadata([x]), "cpu", tf32="on")) == base


def test_graph_hash_changes_with_the_computation():
    from torch_cudal1.graph.hashing import graph_hash

    def trace(fn):
        return torch.fx.symbolic_trace(fn).graph

    class A(nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    class B(nn.Module):
        def forward(self, x):
            return torch.relu(x) + 2

    class C(nn.Module):
        def forward(self, y):
            return torch.relu(y) + 1

    assert graph_hash(trace(A())) != graph_hash(trace(B()))
    assert graph_hash(trace(A())) == graph_hash(trace(C()))


def test_graph_hash_reads_the_branches_of_higher_order_ops():
    # torch.cond's branches are submodules the graph names (get_attr): their code counts too
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch_cudal1.graph.hashing import graph_hash

    def cond(then):
        def f(x):
            return torch.cond(x.sum() > 0, lambda x: then(x), lambda x: x - 1, (x,))
        return make_fx(f, tracing_mode="fake")(torch.randn(3)).graph

    assert graph_hash(cond(torch.sin)) != graph_hash(cond(torch.cos))
    assert graph_hash(cond(torch.sin)) == graph_hash(cond(torch.sin))


def test_every_rewrite_pass_carries_a_source_hash_and_the_key_holds_them():
    from torch_cudal1 import rewrites
    hashes = rewrites.pass_hashes()
    assert set(hashes) == set(rewrites.NAMES) and all(len(h) == 16 for h in hashes.values())
    fields = _fields(torch.randn(4, 8))
    assert fields["versions"]["rewrites"] == hashes


def test_a_changed_pass_changes_its_hash_and_the_key(monkeypatch):
    from torch_cudal1 import rewrites
    from torch_cudal1.cache import key as key_mod

    def edited(name):
        return lambda path: path.read_bytes() + (b"\n# edited\n" if path.name == name else b"")

    cse = "torch_cudal1.rewrites.cse"
    assert rewrites.hash_sources(cse) == rewrites.hash_sources(cse)
    assert rewrites.hash_sources(cse, read=edited("cse.py")) != rewrites.hash_sources(cse)
    # what a pass imports from the rewrites and templates counts as its source too
    assert rewrites.hash_sources(cse, read=edited("_util.py")) != rewrites.hash_sources(cse)
    long_rows = "torch_cudal1.rewrites.long_rows"
    assert rewrites.hash_sources(long_rows, read=edited("long_row_norm.py")) != \
        rewrites.hash_sources(long_rows)
    assert rewrites.hash_sources(cse, read=edited("long_row_norm.py")) == rewrites.hash_sources(cse)

    x = torch.randn(4, 8)
    before = cache_key(_fields(x))
    changed = dict(rewrites.pass_hashes(), cse=rewrites.hash_sources(cse, read=edited("cse.py")))
    monkeypatch.setattr(rewrites, "pass_hashes", lambda: changed)
    key_mod._software_versions.cache_clear()
    try:
        assert cache_key(_fields(x)) != before
    finally:
        monkeypatch.undo()
        key_mod._software_versions.cache_clear()
    assert cache_key(_fields(x)) == before


def test_a_task_files_key_is_built_in_key_py(tmp_path):
    from torch_cudal1.cache.key import task_key
    from torch_cudal1.task import Task
    src = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
           "        return x + 1\ndef get_inputs():\n    return [torch.randn(3)]\n"
           "def get_init_inputs():\n    return []\n")
    key, fields = task_key(Task(src), "cpu")
    assert key == cache_key(fields) and fields["graph"].startswith("src:")
    assert task_key(Task(src + "\n"), "cpu")[0] != key
