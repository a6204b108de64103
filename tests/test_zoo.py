"""Real models through ``backend="cudal1"`` the plain way a user calls them (tiny configurations,
random weights; ``benchmarks/zoo_models.py``): the output equals eager's, every graph is searched
and cached, none falls back; a second process is served from that cache without any search.

Models whose library is missing skip (transformers, torchvision: CI installs both, torchvision in
a second environment, see ``.ci/run``)."""
import json

import pytest
import torch

from benchmarks.zoo_models import BY_NAME, ZOO, call, compare, compile_entry
from helpers import FORBID_SEARCH, run_python
from torch_cudal1.counters import STATS

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

# The cheapest search: eager as the only baseline, no engine round, one input draw. New sizes
# (generation) are served eagerly at once and not searched (no background worker outlives a
# test; tests/test_shapes_serving.py covers those).
FAST = {"baselines": "eager", "rounds": 0, "trials": 1, "generic": "eager", "new_shapes": "generic"}
CI = [e for e in ZOO if e.ci]
PASSED: list = []        # the models this process ran, for the second process to load


def _param(entry):
    # torchvision's models carry the "vision" mark: CI runs them in an environment of their own
    return pytest.param(entry, id=entry.name,
                        marks=[pytest.mark.vision] if entry.needs == "torchvision" else [])


@pytest.fixture(scope="module")
def zoo_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("zoo-cache")


def _delta(before: dict, name: str) -> int:
    return STATS.get(name, 0) - before.get(name, 0)


@pytest.mark.parametrize("entry", [_param(e) for e in CI])
def test_model_matches_eager_and_is_searched(entry, zoo_cache):
    if not entry.available():
        pytest.skip(f"{entry.needs} is not installed")
    torch._dynamo.reset()
    model, inputs = entry.build()
    before = dict(STATS)
    with torch.no_grad():
        expected = call(entry, model, inputs)
        compiled = compile_entry(entry, model, "cudal1", dict(FAST, cache_dir=str(zoo_cache)))
        first = call(entry, model, inputs, compiled)
        again = call(entry, model, inputs, compiled)
    for got in (first, again):
        ok, err, detail = compare(expected, got, entry.dtype)
        assert ok, f"{entry.name}: {detail}"
    assert _delta(before, "fallbacks") == 0, dict(STATS)
    if entry.graphs:
        assert _delta(before, "searches") >= 1 and _delta(before, "winners_loaded") >= 1
        PASSED.append(entry.name)


SECOND = FORBID_SEARCH + """
import json, sys, torch
import torch_cudal1.counters as rt
from benchmarks.zoo_models import BY_NAME, call, compare, compile_entry
out = {}
for name in NAMES:
    entry = BY_NAME[name]
    torch._dynamo.reset()
    model, inputs = entry.build()
    seen, stats = len(rt.SEEN_KEYS), dict(rt.STATS)
    with torch.no_grad():
        expected = call(entry, model, inputs)
        got = call(entry, model, inputs, compile_entry(entry, model, "cudal1", OPTIONS))
    ok, err, detail = compare(expected, got, entry.dtype)
    keys = rt.SEEN_KEYS[seen:]
    out[name] = {"ok": ok, "detail": detail, "hits": sum(k["hit"] for k in keys),
                 "misses": sum(not k["hit"] for k in keys),
                 "fallbacks": rt.STATS.get("fallbacks", 0) - stats.get("fallbacks", 0)}
print(json.dumps({"models": out, "stats": dict(rt.STATS)}))
"""


@pytest.mark.parametrize("vision", [pytest.param(True, id="vision", marks=pytest.mark.vision),
                                    pytest.param(False, id="other")])
def test_a_second_process_is_served_from_the_cache(vision, zoo_cache):
    names = [n for n in PASSED if (BY_NAME[n].needs == "torchvision") == vision]
    if not names:
        pytest.skip("none of these zoo models ran in this process")
    code = (f"NAMES = {names!r}\nOPTIONS = {dict(FAST, mode='cache-only')!r}\n"
            + SECOND)
    r = run_python(code, env={"CUDAL1_CACHE_DIR": str(zoo_cache)})
    assert not r["stats"].get("searches") and not r["stats"].get("extension_builds")
    for name, m in r["models"].items():
        assert m["ok"], (name, m["detail"])
        assert m["hits"] >= 1 and not m["fallbacks"], (name, m)
        # generation meets sizes its first process served with the generic implementation
        assert m["misses"] == 0 or BY_NAME[name].new_sizes, (name, m)
    print(json.dumps(r["models"]))


def test_every_realistic_size_names_a_zoo_entry():
    """``benchmarks/zoo.py --size realistic`` builds these in place of the entries' tiny sizes."""
    from benchmarks.zoo_realistic import REALISTIC
    assert set(REALISTIC) <= set(BY_NAME), set(REALISTIC) - set(BY_NAME)
    assert all(callable(b) for b in REALISTIC.values())
