"""A graph's code can depend on its inputs' strides (a ``view`` only a transposed input allows,
``as_strided`` over a sliced one): the verifier's copies of the first call's inputs keep them."""
import pytest
import torch

from helpers import run_python
from torch_cudal1.harness import real_inputs

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent


def _layouts():
    return [torch.randn(4, 8).t(),                 # dense, permuted
            torch.randn(2, 256)[:, :16],           # gaps between rows
            torch.randn(1, 5).expand(3, 5),        # elements shared (stride 0)
            torch.randn(0, 3)]


def test_copies_and_saved_inputs_keep_strides_and_values(tmp_path):
    xs = _layouts()
    for x in xs:
        for y in (real_inputs.clone_layout(x), real_inputs.clone_layout(x, dtype=torch.float64)):
            assert y.stride() == x.stride() and torch.equal(y.to(x.dtype), x)
            assert not x.numel() or y.data_ptr() != x.data_ptr()
    path = str(tmp_path / "real.safetensors")
    assert real_inputs.save(xs + [3, 1.5, True], path, 1 << 20)
    back = real_inputs.load(path)
    assert back[4:] == [3, 1.5, True]
    for x, y in zip(xs, back):
        assert y.shape == x.shape and y.stride() == x.stride() and torch.equal(y, x)
    assert not real_inputs.save(xs, path, 64)   # over the limit: not captured


def test_a_graph_that_views_its_transposed_input_is_searched_not_fallen_back(cache_dir):
    out = run_python("""
    import json, torch, torch_cudal1
    def f(x):
        return torch.relu(x.transpose(0, 1).view(-1)) * 2   # a view only x's layout allows
    x = torch.randn(8, 4).t()
    c = torch.compile(f, backend="cudal1",
                      options={"baselines": "eager", "rounds": 1, "trials": 2})
    err = (c(x) - f(x)).abs().max().item()
    print(json.dumps({"err": err, "stats": torch_cudal1.stats()}))
    """, env={"CUDAL1_CACHE_DIR": str(cache_dir)})
    assert out["err"] == 0
    assert not out["stats"].get("fallbacks") and out["stats"].get("winners_loaded") == 1, out
