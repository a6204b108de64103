"""The cache across processes: a hit runs no search, engine, verifier or build; corrupt and
half-written entries are never served; new weights never meet a stale result; failures fall back."""

import pytest

from helpers import FORBID_SEARCH, run_python
from torch_cudal1.cache.store import CacheStore

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

MODEL = """
import json, sys, torch, torch.nn as nn
import torch_cudal1, torch_cudal1.counters as rt
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)).eval()
x = torch.randn(3, 16)
opts = {"baselines": "eager", "rounds": 1, "trials": 2}
opts.update(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
"""

RUN = MODEL + """
__PATCH__
c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    err = (c(x) - m(x)).abs().max().item()
print(json.dumps({"err": err, "stats": torch_cudal1.stats(), "keys": [k["key"] for k in rt.SEEN_KEYS]}))
"""


def _code(patch=""):
    return RUN.replace("__PATCH__", patch)

# In the "hit" process every expensive part raises: a hit must need none of them.
FORBID = FORBID_SEARCH


def _run(cache_dir, patch="", **env):
    return run_python(_code(patch), env={"CUDAL1_CACHE_DIR": str(cache_dir), **env})


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One process's search of MODEL into a cache (the tests below start from copies of it)."""
    d = tmp_path_factory.mktemp("searched-cache")
    return d, _run(d)


def _copy_of(searched, tmp_path):
    import shutil
    d = tmp_path / "cache"
    shutil.copytree(searched[0], d)
    return d, searched[1]


def test_second_process_hits_cache_without_search(searched, tmp_path):
    tmp_path, first = _copy_of(searched, tmp_path)
    assert first["err"] < 1e-5
    assert first["stats"].get("searches") == 1 and first["stats"].get("cache_misses") == 1
    second = _run(tmp_path, patch=FORBID)
    assert second["err"] < 1e-5
    assert second["keys"] == first["keys"]
    assert second["stats"].get("cache_hits") == 1
    assert not second["stats"].get("searches") and not second["stats"].get("fallbacks")


# A candidate that raises where it finds more of cudal1 loaded than a process serving a cached
# winner has (the names of that process's modules filled in by the test).
SERVED_VIEW_PROBE = '''
import sys

import torch.nn as nn

SERVED = set(%r)


class ModelNew(nn.Module):
    def forward(self, a, b):
        extra = sorted(m for m in list(sys.modules) if "cudal1" in m and m not in SERVED
                       and not m.startswith("cudal1_winner_"))
        if extra:
            raise RuntimeError(f"loaded where verified, not where served: {extra}")
        return a.unsqueeze(1) * b
'''


def test_a_candidate_sees_no_more_of_cudal1_than_a_served_winner_does(searched, tmp_path):
    """The candidate's process, as the candidate sees it, has none of cudal1's modules that a
    process serving its cached winner lacks (the harness's, the verifier's, the task's): code
    that tells them apart by what is loaded answers the same in both."""
    from pathlib import Path

    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    cache, _ = _copy_of(searched, tmp_path)
    hit = run_python(_code() + 'print(json.dumps({"stats": torch_cudal1.stats(), "modules": '
                               'sorted(m for m in sys.modules if "cudal1" in m)}))',
                     env={"CUDAL1_CACHE_DIR": str(cache), "CUDAL1_SERVE_CHECK": "off"})
    assert hit["stats"].get("cache_hits") == 1 and not hit["stats"].get("searches"), hit
    task = Task.from_file(Path(__file__).parent / "adversarial" / "tasks" / "diag_matmul.py")
    probe = Candidate(SERVED_VIEW_PROBE % (hit["modules"],), origin="test:served_view")
    verdict, _ = evaluate(task, probe, timeout_s=120, time_it=False,
                          build_cache_dir=str(tmp_path / "builds"))
    assert verdict.accepted, verdict.detail


def test_corrupt_entry_is_quarantined_and_rebuilt(searched, tmp_path):
    tmp_path, first = _copy_of(searched, tmp_path)
    store = CacheStore(tmp_path)
    (key,) = store.keys()
    winner = store.entry_path(key) / "winner.py"
    winner.write_text(winner.read_text() + "\nraise SystemExit('tampered')\n")
    second = _run(tmp_path)
    assert second["err"] < 1e-5
    assert second["stats"].get("searches") == 1 and not second["stats"].get("cache_hits")
    assert "quarantined" in second["_stderr"]
    assert any(store.quarantine_dir.iterdir())
    assert store.load(key) is not None      # rebuilt, and valid
    assert first["keys"] == second["keys"]


def test_half_written_entry_is_ignored(searched, tmp_path):
    tmp_path, _ = _copy_of(searched, tmp_path)
    store = CacheStore(tmp_path)
    (key,) = store.keys()
    # A writer killed mid-way leaves its staging dir behind, or (on a non-atomic copy) an entry
    # directory without metadata. Neither may be served.
    (store.tmp / f"{key}.999.deadbeef").mkdir(parents=True)
    meta = store.entry_path(key) / "meta.json"
    meta.write_text(meta.read_text()[:40])
    second = _run(tmp_path)
    assert second["err"] < 1e-5 and second["stats"].get("searches") == 1
    third = _run(tmp_path, patch=FORBID)
    assert third["stats"].get("cache_hits") == 1


def test_new_weights_give_new_results(tmp_path):
    code = MODEL + """
c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    before = c(x).clone()
    m[0].weight.mul_(2.0)                         # in place: the same compiled graph must see it
    after = c(x)
    err = (after - m(x)).abs().max().item()
    changed = (after - before).abs().max().item()
    m[3].weight = nn.Parameter(torch.randn(4, 32))   # a new parameter object
    err2 = (c(x) - m(x)).abs().max().item()
print(json.dumps({"err": err, "changed": changed, "err2": err2}))
"""
    r = run_python(code, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["changed"] > 1e-3
    assert r["err"] < 1e-5 and r["err2"] < 1e-5


def test_threads_calling_one_compiled_model_at_once(tmp_path):
    """A serving process with a thread pool: the first calls arrive together. Every thread gets
    eager's answer, none sees an error, and the graph is searched once."""
    code = MODEL + """
import threading
c = torch.compile(m, backend="cudal1", options=opts)
xs = [torch.randn(3, 16) for _ in range(4)]
outs, errors = [None] * 4, []
def call(i):
    try:
        with torch.no_grad():
            outs[i] = c(xs[i])
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with torch.no_grad():
    err = max((o - m(xi)).abs().max().item() for o, xi in zip(outs, xs))
print(json.dumps({"err": err, "errors": errors, "stats": torch_cudal1.stats()}))
"""
    r = run_python(code, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["errors"] == [] and r["err"] < 1e-5, r
    assert r["stats"].get("searches") == 1 and not r["stats"].get("fallbacks"), r["stats"]


def test_failing_engine_falls_back_with_one_warning(tmp_path):
    opts = {"engine": "openai", "engine_url": "http://127.0.0.1:9/v1", "rounds": 1}
    r = run_python(_code().replace("opts.update(", "opts.update(" + repr(opts) + ") or opts.update("),
                   env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["err"] < 1e-5
    assert r["stats"].get("fallbacks") == 1
    warnings = [ln for ln in r["_stderr"].splitlines() if "fallback" in ln]
    assert len(warnings) == 1 and "Log:" in warnings[0], r["_stderr"]
    assert CacheStore(tmp_path).keys() == []       # nothing half-done was cached


def test_strict_raises_instead(tmp_path):
    code = _code().replace("opts = {", "opts = {'strict': True, 'engine': 'openai', "
                                        "'engine_url': 'http://127.0.0.1:9/v1', ")
    with pytest.raises(AssertionError, match="child failed"):
        run_python(code, env={"CUDAL1_CACHE_DIR": str(tmp_path)})


def test_cache_only_mode_never_searches(tmp_path):
    r = _run(tmp_path, CUDAL1_MODE="cache-only")
    assert r["err"] < 1e-5
    assert not r["stats"].get("searches")
    assert "cache-only" in r["_stderr"]


def test_backend_registered_without_importing_the_package(tmp_path):
    code = """
import json, sys, torch
from torch._dynamo import list_backends
f = torch.compile(lambda x: torch.sin(x) * 2, backend="cudal1", options={"baselines": "eager", "rounds": 0})
x = torch.randn(5)
err = (f(x) - torch.sin(x) * 2).abs().max().item()
print(json.dumps({"err": err, "imported": "torch_cudal1" in sys.modules,
                  "listed": list_backends(exclude_tags=()).count("cudal1")}))
"""
    r = run_python(code, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["err"] < 1e-6 and r["imported"] and r["listed"] == 1


def test_training_graph_runs_with_autograd(tmp_path):
    code = """
import json, torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
c = torch.compile(m, backend="cudal1", options={"training": "eager"})
x = torch.randn(4, 8)
c(x).sum().backward()
g1 = [p.grad.clone() for p in m.parameters()]
m.zero_grad()
m(x).sum().backward()
err = max((a - p.grad).abs().max().item() for a, p in zip(g1, m.parameters()))
print(json.dumps({"err": err}))
"""
    r = run_python(code, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["err"] < 1e-6
