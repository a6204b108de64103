"""Shapes the way serving sees them: a size not cached of a graph with dynamic shapes, or of a
static graph Dynamo compiled again for another size, is served at once by the shape-generic
implementation; no search runs inside ``forward`` for it; a size called again is searched by a
background worker and its winner swapped in."""
import pytest
import torch
import torch.nn as nn

from helpers import run_python
from torch_cudal1.counters import STATS

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

BASE = {"baselines": "eager", "rounds": 0, "trials": 1}


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).eval()


def _calls(compiled, model, batches):
    """[(batch, max error, searches so far)] of one call per batch size."""
    out = []
    with torch.no_grad():
        for b in batches:
            x = torch.randn(b, 16)
            err = (compiled(x) - model(x)).abs().max().item()
            out.append((b, err, STATS["searches"]))
    return out


def test_automatic_dynamic_searches_the_first_size_only(tmp_path):
    torch._dynamo.reset()
    m = _mlp()
    s0, g0 = STATS["searches"], STATS["generic_sizes"]
    c = torch.compile(m, backend="cudal1",
                      options=dict(BASE, cache_dir=str(tmp_path), new_shapes="generic",
                                   generic="eager"))
    calls = _calls(c, m, [2, 2, 4, 7, 4, 2])
    assert all(err < 1e-5 for _, err, _ in calls), calls
    # batch 2: the static graph, searched at its first call; 4 and 7: Dynamo's dynamic graph,
    # served at once (and 2 again through it)
    assert [n - s0 for _, _, n in calls] == [1, 1, 1, 1, 1, 1]
    assert STATS["generic_sizes"] - g0 == 3


def test_static_graphs_of_one_model_at_a_second_size_are_not_searched_in_forward(tmp_path):
    torch._dynamo.reset()
    m = _mlp()
    s0 = STATS["searches"]
    opts = dict(BASE, cache_dir=str(tmp_path), new_shapes="generic", generic="eager")
    c = torch.compile(m, backend="cudal1", dynamic=False, options=opts)
    calls = _calls(c, m, [2, 4, 6])
    assert all(err < 1e-5 for _, err, _ in calls), calls
    assert [n - s0 for _, _, n in calls] == [1, 1, 1]
    # A fresh Dynamo (a new process, as `cudal1 warm` compiles): the first size is searched.
    torch._dynamo.reset()
    c = torch.compile(m, backend="cudal1", dynamic=False, options=opts)
    assert [n - s0 for _, _, n in _calls(c, m, [4])] == [2]


DYNAMIC = """
import json, time, torch, torch.nn as nn
import torch_cudal1, torch_cudal1.counters as rt
from torch_cudal1.serve import worker
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).eval()
c = torch.compile(m, backend="cudal1", dynamic=True,
                  options={"baselines": "eager", "rounds": 0, "trials": 1, "generic": "inductor"})
calls = []
with torch.no_grad():
    for b in (2, 3, 5, 3):
        x = torch.randn(b, 16)
        t0 = time.monotonic()
        err = (c(x) - m(x)).abs().max().item()
        calls.append({"batch": b, "err": err, "s": time.monotonic() - t0,
                      "searches": torch_cudal1.stats().get("searches", 0)})
    idle = worker.wait_background(timeout=400)
    before = dict(torch_cudal1.stats())
    x = torch.randn(3, 16)
    after_swap = (c(x) - m(x)).abs().max().item()
counters = torch._dynamo.utils.counters
builds = counters["inductor"]["fxgraph_cache_miss"] + counters["inductor"]["fxgraph_cache_hit"]
print(json.dumps({"calls": calls, "idle": idle, "before": before, "after_swap": after_swap,
                  "stats": torch_cudal1.stats(), "frames": counters["frames"]["total"],
                  "inductor_builds": builds}))
"""


def test_dynamic_shapes_serve_inductor_at_once_and_search_a_repeated_size_in_the_background(tmp_path):
    r = run_python(DYNAMIC, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    calls, s = r["calls"], r["stats"]
    assert all(c["err"] < 1e-5 for c in calls) and r["after_swap"] < 1e-5, calls
    assert all(c["searches"] == 0 for c in calls) and not s.get("searches")   # none in forward
    assert s["generic_sizes"] == 3 and not s.get("fallbacks")
    # batch 3 was called twice: searched by a background worker, its winner swapped in;
    # batches 2 and 5, met once, were not searched
    assert r["idle"] and s["async_jobs"] == 1 and s["async_swaps"] == 1
    assert r["before"]["winners_loaded"] == 1
    # Dynamo compiled the model once, inductor its dynamic graph once, for every size
    assert r["frames"] == 1 and r["inductor_builds"] == 1, r
    assert "shape-generic inductor implementation" in r["_stderr"]


RECIPE = '''
import torch, torch.nn as nn
OPTIONS = {"baselines": "eager", "rounds": 0, "trials": 1}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)
    def forward(self, x):
        return torch.tanh(self.proj(x)) * 2

def models():
    torch.manual_seed(0)
    yield "net", Net, [(torch.randn(b, 16),) for b in (2, 4)]
'''

SERVE = """
import json, torch, importlib.util, torch_cudal1, torch_cudal1.counters as rt
spec = importlib.util.spec_from_file_location("recipe", {recipe!r})
recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)
torch.manual_seed(0)
m = recipe.Net().eval()
c = torch.compile(m, backend="cudal1", options={{"baselines": "eager", "rounds": 0,
                                                 "generic": "eager", "new_shapes": "generic"}})
out = []
with torch.no_grad():
    for b in (2, 4, 6, 4):
        x = torch.randn(b, 16)
        seen = len(rt.SEEN_KEYS)
        err = (c(x) - m(x)).abs().max().item()
        new = rt.SEEN_KEYS[seen:]        # none where the size's implementation was chosen before
        out.append({{"batch": b, "err": err, "hit": [k["hit"] for k in new]}})
print(json.dumps({{"calls": out, "stats": torch_cudal1.stats()}}))
"""


def test_warmed_sizes_are_served_from_the_cache_and_others_generic_without_a_search(tmp_path,
                                                                                     capsys):
    """`cudal1 warm` names the sizes to search ahead of time; a serving process in search mode
    (automatic dynamic shapes) is served those from the cache, and another size by the generic
    implementation at once, with no search inside the call."""
    from torch_cudal1.cli import main
    recipe = tmp_path / "r.py"
    recipe.write_text(RECIPE)
    cache = tmp_path / "cache"
    assert main(["warm", str(recipe), "--device", "cpu", "--cache-dir", str(cache)]) == 0
    capsys.readouterr()
    r = run_python(SERVE.format(recipe=str(recipe)), env={"CUDAL1_CACHE_DIR": str(cache)})
    calls, s = r["calls"], r["stats"]
    assert all(c["err"] < 1e-5 for c in calls), calls
    # 2: the static graph; 4: the dynamic graph (both warmed); 6: not warmed: generic at once;
    # 4 again: its winner, chosen before
    assert [c["hit"] for c in calls] == [[True], [True], [False], []], calls
    assert not s.get("searches") and s.get("generic_sizes") == 1 and not s.get("fallbacks")


def test_a_graph_whose_verification_refused_inductor_gets_no_unverified_inductor():
    """Sizes not searched yet, and failures, run the user's graph eagerly once a verification
    of the graph (this process's search or a cached entry's) refused inductor's answers."""
    from torch_cudal1.options import Options
    from torch_cudal1.serve.graph_runner import GraphRunner
    gm = torch.fx.symbolic_trace(lambda k: (k * k) // 3)
    opts = Options.resolve({"generic": "inductor", "fallback": "inductor"})
    runner = GraphRunner(gm, [torch.zeros(4, dtype=torch.int64)], opts)
    assert runner.generic().kind == "inductor" and runner.fallback().kind == "inductor"
    attempt = {"candidate": {"origin": "baseline:inductor"},
               "verdict": {"accepted": False, "reason": "timeout"}}
    runner._note_refusals({"attempts": [attempt]})   # says nothing of its answers
    assert runner.generic().kind == "inductor"
    runner._note_refusals({"attempts": [dict(attempt, verdict={"accepted": False,
                                                                "reason": "mismatch"})]})
    assert runner.generic().kind == "eager" and runner.fallback().kind == "eager"


def test_a_new_size_never_gets_answers_the_verifier_refused(tmp_path):
    """Inductor's CPU code for an int64 product that overflows differs from eager's (the
    verifier refuses it at the first size): the next size, served before any search of it,
    gives eager's answers too."""
    torch._dynamo.reset()

    class M(nn.Module):
        def forward(self, k):
            return (k * k) // 3

    m = M()
    g = torch.Generator().manual_seed(0)
    c = torch.compile(m, backend="cudal1", options=dict(
        BASE, baselines="eager,inductor", cache_dir=str(tmp_path), new_shapes="generic"))
    for n in (64, 48, 48):
        k = torch.randint(-2**40, 2**40, (n,), generator=g)
        assert torch.equal(c(k), m(k)), n
