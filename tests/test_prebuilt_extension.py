"""A winner that builds a C++ extension with load_inline is stored with its build, and a cache
hit in a fresh process loads that build without running any compiler."""
import json

import pytest

from helpers import run_python
from torch_cudal1.cache.key import cache_key
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.contracts import Attempt, Candidate
from torch_cudal1.search.store import store_search_result
from torch_cudal1.search import SearchResult
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2 + 1

def get_inputs():
    return [torch.randn(32, 16)]

def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_ext = load_inline(
    name="cudal1_test_affine",
    cpp_sources="torch::Tensor affine(torch::Tensor x) { return x * 2 + 1; }",
    functions=["affine"], verbose=False)

class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.affine(x)

def get_init_inputs():
    return []
'''

HIT = """
import json, torch, torch.utils.cpp_extension as ce
def _forbidden(*a, **k):
    raise AssertionError("a cache hit must not build")
ce.load_inline = _forbidden
ce._jit_compile = _forbidden
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cache.winner import load_winner
from torch_cudal1.counters import STATS
entry = CacheStore({root!r}).load({key!r})
forward = load_winner(entry, "cpu")
x = torch.randn(8, 16)
err = (forward(x) - (x * 2 + 1)).abs().max().item()
print(json.dumps({{"err": err, "prebuilt": STATS["prebuilt_loaded"]}}))
"""


@pytest.mark.slow
def test_hit_loads_the_stored_build_without_a_compiler(tmp_path):
    task = Task(TASK, name="affine")
    cand = Candidate(CANDIDATE, origin="test:load_inline", round=1)
    wd = tmp_path / "work"
    verdict, timing = evaluate(task, cand, device="cpu", trials=1, timeout_s=600, workdir=str(wd),
                               build_cache_dir=str(tmp_path / "builds"))
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert any((wd / "build").rglob("cudal1_test_affine*.so"))
    result = SearchResult(key="k", winner=Attempt(cand, verdict, timing), attempts=[],
                          eager_ms=None, inductor_ms=None, rounds_run=1, seconds=0.0,
                          winner_dir=wd)
    store = CacheStore(tmp_path / "cache")
    fields = {"graph": "test-prebuilt"}
    key = cache_key(fields)
    entry = store_search_result(store, key, fields, task, result, "cpu")
    assert any(entry.artifacts.rglob("*.so"))
    r = run_python(HIT.format(root=str(tmp_path / "cache"), key=key))
    assert r["err"] < 1e-6 and r["prebuilt"] == 1
    assert json.loads((entry.path / "meta.json").read_text())["winner"]["origin"] == "test:load_inline"
