"""Shared test utilities: running Python in a fresh interpreter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A one-op task (relu, then a scale) for tests of the cache and search plumbing around it.
RELU_TASK = """
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
"""


def run_python(code: str, env: dict | None = None, timeout: float = 600) -> dict:
    """Run ``code`` in a fresh interpreter; it must print one JSON object as its last line."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    result = json.loads(lines[-1])
    result["_stderr"] = proc.stderr
    return result


def run_triton_interpreted(code: str, timeout: float = 300) -> str:
    """Run ``code`` in a fresh interpreter under Triton's interpreter (chosen when kernels are
    defined, hence a child), Triton kernels on the CPU; its stdout."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# Python to run in a child before it compiles: on a cache hit nothing expensive may run — no
# search, verifier, engine or extension build — so each of them raises.
FORBID_SEARCH = """
def _forbidden(*a, **k):
    raise AssertionError("a cache hit must not run this")
import torch_cudal1.search.loop, torch_cudal1.verify.runner, torch_cudal1.engines, torch.utils.cpp_extension
torch_cudal1.search.loop.run_search = _forbidden
torch_cudal1.verify.runner.evaluate = _forbidden
torch_cudal1.engines.create = _forbidden
torch.utils.cpp_extension.load_inline = _forbidden
torch.utils.cpp_extension._jit_compile = _forbidden
"""
