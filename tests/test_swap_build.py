"""A winner that compiles on its first call (the inductor baseline) never compiles in a serving
call: the async swap builds it on the launcher's thread first, and a warm start finds inductor's
caches filled from the entry (FX graph and AOTAutograd caches hit, even with an empty inductor
cache dir: another machine)."""
import pytest

from helpers import run_python

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

MODEL = """
import json, os, time, torch, torch.nn as nn
import torch_cudal1
from torch._dynamo.utils import counters
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(32, 32), nn.ReLU()).eval()
x = torch.randn(4, 32)
opts = {"baselines": "inductor", "rounds": 0, "trials": 1, "mode": MODE}


def compiles():
    # every frame Dynamo compiled and every inductor lookup, hit or miss
    return (counters["frames"]["ok"] + counters["inductor"]["fxgraph_cache_hit"]
            + counters["inductor"]["fxgraph_cache_miss"])


c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    errs = [(c(x) - m(x)).abs().max().item()]
    from torch_cudal1.serve import worker
    worker.wait_background(600)
    deadline = time.monotonic() + 300
    while MODE == "async" and not torch_cudal1.stats().get("async_swaps") \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    before = compiles()
    errs.append((c(x) - m(x)).abs().max().item())       # the first call after the swap
    after = compiles()
print(json.dumps({"errs": errs, "stats": torch_cudal1.stats(), "compiled_in_call": after - before,
                  "inductor": dict(counters["inductor"]),
                  "aot": dict(counters["aot_autograd"])}))
"""


@pytest.mark.slow
def test_async_swap_and_warm_start_of_an_inductor_winner_compile_nothing_in_a_call(tmp_path):
    from torch_cudal1.cache.store import CacheStore
    from torch_cudal1.cache.winner import INDUCTOR_CACHE
    env = {"CUDAL1_CACHE_DIR": str(tmp_path / "cache"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-a")}
    r = run_python(MODEL.replace("MODE", '"async"'), env=env)
    assert max(r["errs"]) < 1e-5
    s = r["stats"]
    assert s.get("async_swaps") == 1 and s.get("built_off_path") == 1, s
    assert r["compiled_in_call"] == 0, r            # built before the swap, not in this call
    (key,) = CacheStore(tmp_path / "cache").keys()
    entry = CacheStore(tmp_path / "cache").load(key)
    assert entry.winner_origin == "baseline:inductor"
    assert (entry.artifacts / INDUCTOR_CACHE).is_file()  # inductor's artefacts kept with it
    # The worker built the winner on inputs of the serving process's kinds (parameters): the
    # serving process's build hit what the worker left.
    assert r["inductor"].get("fxgraph_cache_hit", 0) >= 1 and not r["inductor"].get(
        "fxgraph_cache_miss"), r

    # A warm start on "another machine": same cudal1 entry, an empty inductor cache dir.
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor-b")
    r = run_python(MODEL.replace("MODE", '"search"'), env=env)
    assert max(r["errs"]) < 1e-5
    s = r["stats"]
    assert s.get("cache_hits") == 1 and s.get("inductor_caches_loaded") == 1 and \
        not s.get("searches"), s
    assert r["inductor"].get("fxgraph_cache_hit", 0) >= 1 and not r["inductor"].get(
        "fxgraph_cache_miss"), r
    assert r["aot"].get("autograd_cache_hit", 0) >= 1 and not r["aot"].get(
        "autograd_cache_miss"), r
