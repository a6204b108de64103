"""Real models compile with backend="cudal1" and match eager; each graph gets a cache entry."""
import pytest
import torch
import torch.nn as nn

import torch_cudal1
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.counters import STATS

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

FAST = {"baselines": "eager", "rounds": 1, "trials": 2}


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, 5))

    def forward(self, x):
        return self.head(self.features(x))


def _check(model, inputs, cache_dir, atol=1e-5):
    torch.manual_seed(0)
    model = model.eval()
    before, fallbacks = STATS["searches"], STATS["fallbacks"]
    compiled = torch.compile(model, backend="cudal1", options=dict(FAST, cache_dir=str(cache_dir)))
    with torch.no_grad():
        expected = model(*inputs)
        got = compiled(*inputs)
        again = compiled(*inputs)
    exp_t = expected if isinstance(expected, torch.Tensor) else expected[0]
    got_t = got if isinstance(got, torch.Tensor) else got[0]
    torch.testing.assert_close(got_t, exp_t, atol=atol, rtol=1e-4)
    torch.testing.assert_close(again if isinstance(again, torch.Tensor) else again[0], exp_t,
                               atol=atol, rtol=1e-4)
    assert STATS["searches"] > before, "no search ran"
    assert CacheStore(cache_dir).keys(), "no cache entry was written"
    assert STATS["fallbacks"] == fallbacks, torch_cudal1.stats()


def test_small_cnn(tmp_path):
    torch.manual_seed(0)
    m = SmallCNN()
    with torch.no_grad():   # non-trivial BatchNorm statistics
        for bn in (m.features[1], m.features[5]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    _check(m, [torch.randn(2, 3, 16, 16)], tmp_path / "c")


def test_transformer_block(tmp_path):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True, norm_first=True)
    _check(layer, [torch.randn(2, 6, 32)], tmp_path / "c", atol=1e-4)


# GPT-2 from transformers, called plainly (its default cache included): tests/test_zoo.py.
