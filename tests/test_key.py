"""Cache keys: stable across processes, blind to names, sensitive to what changes results."""
import torch
import torch.nn as nn

from helpers import run_python
from torch_cudal1.cache.key import cache_key, input_metadata, key_fields

KEY_SCRIPT = """
import json, torch, torch.nn as nn
import torch_cudal1.runtime as rt
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
