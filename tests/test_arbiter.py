"""Before serving, the winner is timed against the user's own graph (eager, inductor) here; the
faster is served only when it wins beyond the noise and agrees with the winner, and the decision
is kept so that a cache hit does not time again."""
import json
import time

import pytest
import torch
from helpers import run_python

from torch_cudal1.serve import arbiter
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.options import Options


def _gm():
    def f(x, w):
        return (torch.relu(x @ w) * 2.0,)
    return torch.fx.symbolic_trace(f)


def _slow_winner(delay_s):
    def winner(x, w, *consts):
        time.sleep(delay_s)   # a served implementation that is slower here than the user's graph
        return (torch.relu(x @ w) * 2.0,)
    return winner


@pytest.fixture
def args():
    torch.manual_seed(0)
    return [torch.randn(16, 32), torch.randn(32, 8)]


def test_a_faster_user_graph_is_served_and_the_decision_kept(tmp_path, args, monkeypatch):
    store = CacheStore(tmp_path)
    monkeypatch.setattr(arbiter, "_alternatives", lambda gm, a, *_: {arbiter.EAGER: lambda: gm.forward})
    fn = arbiter.serve(_slow_winner(0.02), _gm(), args, 2, store, "k1", "cpu")
    d = json.loads((store.root / "serve" / "k1.json").read_text())
    assert d["choice"] == "eager" and d["ms"]["winner"] > d["ms"]["eager"], d
    assert fn.forward is not None and fn(*args)[0].shape == (16, 8)
    # A later process reads the decision: no timing at all.
    monkeypatch.setattr(arbiter, "_time", lambda *a: pytest.fail("a kept decision must not time"))
    again = arbiter.serve(_slow_winner(0.005), _gm(), args, 2, store, "k1", "cpu")
    torch.testing.assert_close(again(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)


def test_within_the_noise_the_verified_winner_stays(tmp_path, args, monkeypatch):
    store = CacheStore(tmp_path)
    gm = _gm()
    monkeypatch.setattr(arbiter, "_alternatives", lambda g, a, *_: {arbiter.EAGER: lambda: g.forward})
    winner = arbiter._on_own_inputs(gm.forward, 2)   # the same code: no real difference
    fn = arbiter.serve(winner, gm, args, 2, store, "k2", "cpu")
    d = json.loads((store.root / "serve" / "k2.json").read_text())
    if d["choice"] == "winner":
        assert fn is winner
    else:   # allowed only when it was faster in every round, by the margin at the median
        e, w = d["rounds_ms"]["eager"], d["rounds_ms"]["winner"]
        assert all(a < b for a, b in zip(e, w)), d


def test_an_alternative_that_disagrees_is_never_served(tmp_path, args, monkeypatch):
    store = CacheStore(tmp_path)

    def wrong(x, w):
        return (torch.relu(x @ w) * 3.0,)
    monkeypatch.setattr(arbiter, "_alternatives",
                        lambda g, a, *_: {arbiter.EAGER: lambda: torch.fx.symbolic_trace(wrong).forward})
    winner = _slow_winner(0.005)
    fn = arbiter.serve(winner, _gm(), args, 2, store, "k3", "cpu")
    assert fn is winner
    d = json.loads((store.root / "serve" / "k3.json").read_text())
    assert d["choice"] == "winner" and "eager" not in d["ms"]


def test_auto_means_gpu_only():
    assert arbiter.enabled("auto", "cuda:0") and not arbiter.enabled("auto", "cpu")
    assert arbiter.enabled("on", "cpu") and not arbiter.enabled("off", "cuda")


def test_through_the_backend_with_a_cache_hit_in_a_fresh_process(tmp_path):
    """End to end on CPU: the search's winner, eager and inductor on the user's graph are timed
    once; a fresh process hits the cache, reads the decision and times nothing."""
    code = """
        import json, torch, torch_cudal1
        from torch_cudal1.serve import arbiter
        FORBID = {forbid}
        if FORBID:
            def no(*a, **k):
                raise AssertionError("a cache hit with a kept decision must not time")
            arbiter._time = no
        def f(x):
            return torch.nn.functional.gelu(x) * 2 + 1
        c = torch.compile(f, backend="cudal1", options={{
            "cache_dir": {cache!r}, "arbitrate": "on", "rounds": 0, "progress": False}})
        x = torch.randn(64, 64)
        with torch.no_grad():
            ok = torch.allclose(c(x), f(x), atol=1e-5) and torch.allclose(c(x + 1), f(x + 1), atol=1e-5)
        print(json.dumps({{"ok": ok, "stats": dict(torch_cudal1.stats())}}))
    """
    cache = str(tmp_path / "cache")
    cold = run_python(code.format(forbid=False, cache=cache))
    assert cold["ok"] and cold["stats"].get("searches") == 1
    decisions = list((tmp_path / "cache").rglob("serve/*.json"))
    assert len(decisions) == 1
    d = json.loads(decisions[0].read_text())
    assert set(d["ms"]) >= {"winner", "eager", "inductor"}, d
    warm = run_python(code.format(forbid=True, cache=cache))
    assert warm["ok"] and warm["stats"].get("cache_hits") == 1 and not warm["stats"].get("searches")


def test_a_warm_start_builds_the_arbiters_inductor_choice_from_inductors_cache(tmp_path):
    """A decision for inductor is followed on every warm start by building the user's graph
    again; that build must come out of inductor's FX graph cache, as torch.compile's own does
    (outside Dynamo, on real inputs, inductor bypassed it: "No shape env")."""
    code = """
        import json, torch
        from torch._dynamo.utils import counters
        from torch_cudal1.serve import arbiter
        def f(x, w):
            return (torch.relu(x @ w) * 2.0,)
        gm = torch.fx.symbolic_trace(f)
        torch.manual_seed(0)
        args = [torch.randn(16, 32), torch.randn(32, 8)]
        out = arbiter._alternatives(gm, args)[arbiter.INDUCTOR]()(*args)
        print(json.dumps({"ok": torch.allclose(out[0], f(*args)[0], atol=1e-5),
                          "counters": dict(counters["inductor"])}))
    """
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    cold, warm = run_python(code, env), run_python(code, env)
    assert cold["ok"] and warm["ok"]
    assert cold["counters"].get("fxgraph_cache_miss") == 1, cold["counters"]
    assert warm["counters"].get("fxgraph_cache_hit") == 1, warm["counters"]
    assert not warm["counters"].get("fxgraph_cache_bypass"), warm["counters"]


def test_cache_only_follows_a_kept_decision_and_never_times(tmp_path):
    """A served cache (cache-only) times nothing: it follows the decision kept where the cache
    was warmed, and serves the cached winner where there is none."""
    code = """
        import json, torch, torch_cudal1
        from torch_cudal1.serve import arbiter
        MODE = {mode!r}
        built = []
        if MODE == "cache-only":
            def no(*a, **k):
                raise AssertionError("cache-only must not time")
            arbiter._time = arbiter.time_in_turns = no
            alternatives = arbiter._alternatives
            def spy(gm, args, graphed="off", autotuned="off"):
                alts = alternatives(gm, args, graphed, autotuned)
                return {{k: (lambda k=k, f=f: built.append(k) or f()) for k, f in alts.items()}}
            arbiter._alternatives = spy
        def f(x):
            return torch.sin(x) + 1
        c = torch.compile(f, backend="cudal1", options={{
            "cache_dir": {cache!r}, "arbitrate": "on", "rounds": 0, "progress": False,
            "mode": MODE, "baselines": "eager"}})
        x = torch.randn(32)
        with torch.no_grad():
            ok = torch.allclose(c(x), f(x))
        print(json.dumps({{"ok": ok, "built": built, "stats": dict(torch_cudal1.stats())}}))
    """
    cache = str(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    run_python(code.format(mode="search", cache=cache))
    (decision,) = (tmp_path / "cache").rglob("serve/*.json")
    decision.write_text(json.dumps({"choice": "eager", "considered": ["eager", "inductor"]}))
    out = run_python(code.format(mode="cache-only", cache=cache))
    assert out["ok"] and out["stats"].get("cache_hits") == 1 and out["built"] == ["eager"], out
    decision.unlink()   # as on a machine that imported entries without decisions
    out = run_python(code.format(mode="cache-only", cache=cache))
    assert out["ok"] and out["stats"].get("cache_hits") == 1 and out["built"] == [], out


def test_without_rounds_a_choice_must_beat_inductor_beyond_its_own_spread():
    from torch_cudal1.contracts import Timing
    t = {"winner": Timing(1.10, 0.2, 20), "eager": Timing(0.77, 0.28, 20),
         "inductor": Timing(0.72, 4.4, 20)}
    assert arbiter.choose(t) == "inductor"       # nothing beats it beyond its own spread
    t["winner"] = Timing(0.4, 0.1, 20)
    assert arbiter.choose(t) == "winner"         # clearly faster
    t["eager"] = Timing(0.2, 0.1, 20)
    assert arbiter.choose(t) == "eager"          # the fastest of the clear ones


def test_rounds_taken_in_turns_are_compared_round_by_round():
    from torch_cudal1.contracts import Timing

    def t(rounds):
        return Timing(sorted(rounds)[len(rounds) // 2], max(rounds) - min(rounds), 50,
                      extra={"rounds_ms": rounds})
    # A host that sped up during the run (the last round): every spread is large, but inductor
    # was faster than the winner in every round (ResNet-18 bf16 on an H200).
    times = {"winner": t([2.06, 2.24, 1.39]), "eager": t([2.95, 2.72, 1.89]),
             "inductor": t([1.86, 1.86, 1.16])}
    assert arbiter.choose(times) == "inductor"
    # The winner faster in two rounds of three only: not clear, inductor stays.
    times["winner"] = t([1.80, 1.80, 1.20])
    assert arbiter.choose(times) == "inductor"
    # Faster in every round but by less than the margin: inductor stays.
    times["winner"] = t([1.85, 1.85, 1.155])
    assert arbiter.choose(times) == "inductor"
    # Clearly faster in every round (BERT fp32 on an H200): the winner.
    times = {"winner": t([1.572, 1.546, 1.543]), "eager": t([1.746, 1.753, 1.765]),
             "inductor": t([1.673, 1.665, 1.663])}
    assert arbiter.choose(times) == "winner"
    times["eager"] = t([1.2, 1.19, 1.18])   # eager far ahead of both: eager
    assert arbiter.choose(times) == "eager"
    # Without inductor (it failed or disagreed) the winner is the reference.
    assert arbiter.choose({"winner": t([1.0, 1.0, 1.0]), "eager": t([0.99, 1.0, 0.99])}) == "winner"


def test_the_graphed_alternative_is_offered_on_request_on_gpus_only(args):
    gm = _gm()
    assert arbiter.INDUCTOR_GRAPHED not in arbiter._alternatives(gm, args, graphed="on")
    g = arbiter.as_cuda_graph(gm.forward)   # off the GPU the CUDA-graph wrapper calls the function
    torch.testing.assert_close(g(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)
    assert arbiter.enabled(Options.resolve({}).arbitrate_cudagraph, "cuda:0")   # on by default on GPUs
    assert not arbiter.enabled(Options.resolve({}).arbitrate_cudagraph, "cpu")
    # the option was a boolean before: those spellings still work
    assert Options.resolve({"arbitrate_cudagraph": False}).arbitrate_cudagraph == "off"
    assert Options.resolve({"arbitrate_cudagraph": True}).arbitrate_cudagraph == "on"
    with pytest.raises(ValueError, match="arbitrate_cudagraph"):
        Options.resolve({"arbitrate_cudagraph": "sometimes"})


def test_the_graphed_alternative_is_offered_on_a_gpu_beside_cudagraph_trees_too(args, monkeypatch):
    """On a GPU the graphed inductor is a candidate unless switched off — in a process already
    replaying torch.compile's cudagraph trees as well (the two coexist once the wrapper captures
    with a cuBLAS workspace of its own: ``benchmarks/results/cudagraph_coexist/``)."""
    from torch._inductor import cudagraph_trees
    gm = _gm()
    assert set(arbiter._alternatives(gm, args, graphed="auto")) == {arbiter.EAGER, arbiter.INDUCTOR}
    monkeypatch.setattr(arbiter, "_cuda_index", lambda a: 0)   # as if the inputs were on cuda:0
    monkeypatch.setattr(cudagraph_trees, "get_manager", lambda i, create_if_none_exists=True: object())
    for setting in ("auto", "on"):
        assert arbiter.INDUCTOR_GRAPHED in arbiter._alternatives(gm, args, graphed=setting)
    assert arbiter.INDUCTOR_GRAPHED not in arbiter._alternatives(gm, args, graphed="off")


def _chain_gm(n: int):
    """x -> tanh(x @ w_i) for n weights, every weight a graph input (as after AOT autograd)."""
    g = torch.fx.Graph()
    h = g.placeholder("x")
    for w in [g.placeholder(f"w{i}") for i in range(n)]:
        h = g.call_function(torch.tanh, (g.call_function(torch.matmul, (h, w)),))
    g.output((h,))
    return torch.fx.GraphModule(torch.nn.Module(), g)


@pytest.mark.gpu
def test_inductor_replayed_as_a_cuda_graph_on_the_users_graph(tmp_path):
    """On a GPU, a launch-bound graph: the graphed variant is offered, agrees with the winner,
    and what is served gives fresh, correct outputs call after call."""
    torch.manual_seed(0)
    w = [torch.randn(64, 64, device="cuda") / 8 for _ in range(12)]
    gm = _chain_gm(12)
    x = torch.randn(8, 64, device="cuda")
    assert arbiter.INDUCTOR_GRAPHED in arbiter._alternatives(gm, [x, *w], graphed="auto")
    with torch.no_grad():
        store = CacheStore(tmp_path)
        fn = arbiter.serve(gm.forward, gm, [x, *w], 13, store, "g", "cuda:0", graphed="on")
        d = json.loads((store.root / "serve" / "g.json").read_text())
        assert arbiter.INDUCTOR_GRAPHED in d["ms"], d
        outs = []
        for _ in range(3):
            xi = torch.randn(8, 64, device="cuda")
            outs.append((xi, fn(xi, *w)[0]))
        for xi, o in outs:   # earlier results unchanged by later calls
            torch.testing.assert_close(o, gm(xi, *w)[0], rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_max_autotune_on_the_users_graph_on_a_gpu(tmp_path):
    """``arbitrate_max_autotune``: inductor max-autotune's code, and it replayed as a CUDA graph,
    are built, agree with the winner and are timed; what is served answers fresh inputs right."""
    torch.manual_seed(0)
    w = [torch.randn(256, 256, device="cuda") / 16 for _ in range(4)]
    gm = _chain_gm(4)
    x = torch.randn(64, 256, device="cuda")
    with torch.no_grad():
        store = CacheStore(tmp_path)
        fn = arbiter.serve(gm.forward, gm, [x, *w], 5, store, "t", "cuda:0", graphed="auto",
                           autotuned="on")
        d = json.loads((store.root / "serve" / "t.json").read_text())
        assert {arbiter.AUTOTUNED, arbiter.AUTOTUNED_GRAPHED} <= set(d["ms"]), d
        for _ in range(3):
            xi = torch.randn(64, 256, device="cuda")
            torch.testing.assert_close(fn(xi, *w)[0], gm(xi, *w)[0], rtol=1e-3, atol=1e-3)


def test_a_kept_decision_is_made_again_when_a_new_alternative_is_on_offer(tmp_path, args, monkeypatch):
    store = CacheStore(tmp_path)
    monkeypatch.setattr(arbiter, "_alternatives", lambda g, a, *_: {arbiter.EAGER: lambda: g.forward})
    arbiter.serve(_slow_winner(0.02), _gm(), args, 2, store, "k5", "cpu")
    assert json.loads((store.root / "serve" / "k5.json").read_text())["considered"] == ["eager"]
    # The same alternatives: the kept decision stands, nothing is timed.
    monkeypatch.setattr(arbiter, "_time", lambda *a: pytest.fail("a kept decision must not time"))
    arbiter.serve(_slow_winner(0.02), _gm(), args, 2, store, "k5", "cpu")
    # One more on offer (as with arbitrate_cudagraph turned on): decided again, with it.
    monkeypatch.undo()
    monkeypatch.setattr(arbiter, "_alternatives", lambda g, a, *_: {
        arbiter.EAGER: lambda: g.forward, arbiter.INDUCTOR: lambda: g.forward})
    arbiter.serve(_slow_winner(0.02), _gm(), args, 2, store, "k5", "cpu")
    d = json.loads((store.root / "serve" / "k5.json").read_text())
    assert d["considered"] == ["eager", "inductor"] and "inductor" in d["ms"]


def test_max_autotune_is_on_offer_when_asked_for_and_served_where_clearly_faster(tmp_path, args,
                                                                                 monkeypatch):
    """``arbitrate_max_autotune``: the user's graph through inductor max-autotune (and, on a GPU
    with graphs allowed, replayed as a CUDA graph) joins the alternatives; it is compiled only
    when timed, agrees with the winner, and a decision naming it is kept and followed."""
    gm = _gm()
    assert arbiter.AUTOTUNED not in arbiter._alternatives(gm, args)
    assert arbiter.AUTOTUNED not in arbiter._alternatives(gm, args, autotuned="auto")   # CPU
    assert set(arbiter._alternatives(gm, args, autotuned="on")) == {
        arbiter.EAGER, arbiter.INDUCTOR, arbiter.AUTOTUNED}
    monkeypatch.setattr(arbiter, "_cuda_index", lambda a: 0)   # as if the inputs were on cuda:0
    assert {arbiter.AUTOTUNED, arbiter.AUTOTUNED_GRAPHED} <= set(
        arbiter._alternatives(gm, args, graphed="auto", autotuned="auto"))
    assert arbiter.AUTOTUNED_GRAPHED not in arbiter._alternatives(gm, args, autotuned="auto")
    monkeypatch.undo()

    store = CacheStore(tmp_path)
    real = arbiter.time_in_turns

    def autotuned_fastest(fns, a, device, rounds=arbiter.ROUNDS):
        times = real(fns, a, device, rounds=3)
        for k, t in times.items():   # what a device where its templates win would measure
            if k == arbiter.AUTOTUNED:
                t.median_ms, t.extra["rounds_ms"] = 1e-4, [1e-4] * 3
        return times
    monkeypatch.setattr(arbiter, "time_in_turns", autotuned_fastest)
    fn = arbiter.serve(_slow_winner(0.0), gm, args, 2, store, "k-mat", "cpu", autotuned="on")
    d = json.loads((store.root / "serve" / "k-mat.json").read_text())
    assert d["choice"] == arbiter.AUTOTUNED and arbiter.AUTOTUNED in d["considered"], d
    torch.testing.assert_close(fn(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)
    # kept: a later process follows it without timing, and a bundle may carry it
    from torch_cudal1.cache.decisions import valid
    assert valid(d) is d
    monkeypatch.setattr(arbiter, "time_in_turns", lambda *a, **k: pytest.fail("timed again"))
    again = arbiter.serve(_slow_winner(0.0), gm, args, 2, store, "k-mat", "cpu", autotuned="on")
    torch.testing.assert_close(again(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)


def test_a_max_autotune_winner_is_not_compiled_again_but_is_timed_as_a_cuda_graph(tmp_path, args,
                                                                                  monkeypatch):
    """Where the search's winner already is inductor max-autotune's code, the arbiter spends no
    second max-autotune compile on the same graph; where graphs are allowed it times that winner
    replayed as a CUDA graph (no compile), which a decision may then name. Other winners still get
    max-autotune compiled."""
    gm = _gm()
    monkeypatch.setattr(arbiter, "_cuda_index", lambda a: 0)   # graphs allowed, as on cuda:0
    quick = arbiter.time_in_turns
    monkeypatch.setattr(arbiter, "time_in_turns", lambda fns, a, device, rounds=3: quick(fns, a, device, 3))
    store = CacheStore(tmp_path)
    considered = {}
    for k, origin in enumerate(["builtin:inductor-max-autotune",
                                "builtin:inductor-max-autotune+cudagraph", "builtin:cudagraph"]):
        w = _slow_winner(0.0)
        w.origin = origin
        fn = arbiter.serve(w, gm, args, 2, store, f"k-origin{k}", "cpu", graphed="auto",
                           autotuned="on")
        torch.testing.assert_close(fn(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)
        d = json.loads((store.root / "serve" / f"k-origin{k}.json").read_text())
        considered[origin] = set(d["ms"])
    assert arbiter.AUTOTUNED not in considered["builtin:inductor-max-autotune"]
    assert arbiter.AUTOTUNED_GRAPHED in considered["builtin:inductor-max-autotune"]
    assert not {arbiter.AUTOTUNED, arbiter.AUTOTUNED_GRAPHED} & considered[
        "builtin:inductor-max-autotune+cudagraph"]
    assert {arbiter.AUTOTUNED, arbiter.AUTOTUNED_GRAPHED} <= considered["builtin:cudagraph"]


@pytest.mark.gpu
def test_a_max_autotune_winner_replayed_as_a_cuda_graph_on_a_gpu(tmp_path):
    """The winner itself (standing in for max-autotune's code) captured and replayed: timed,
    and what is served answers fresh inputs right."""
    torch.manual_seed(0)
    w = [torch.randn(256, 256, device="cuda") / 16 for _ in range(4)]
    gm = _chain_gm(4)
    x = torch.randn(64, 256, device="cuda")
    win = torch.compile(gm.forward)
    win.origin = "builtin:inductor-max-autotune"
    with torch.no_grad():
        store = CacheStore(tmp_path)
        fn = arbiter.serve(win, gm, [x, *w], 5, store, "t", "cuda:0", graphed="auto",
                           autotuned="auto")
        d = json.loads((store.root / "serve" / "t.json").read_text())
        assert arbiter.AUTOTUNED_GRAPHED in d["ms"] and arbiter.AUTOTUNED not in d["ms"], d
        for _ in range(3):
            xi = torch.randn(64, 256, device="cuda")
            torch.testing.assert_close(fn(xi, *w)[0], gm(xi, *w)[0], rtol=1e-3, atol=1e-3)


def test_max_autotune_auto_is_on_offer_only_where_the_search_found_it_close(tmp_path, args,
                                                                            monkeypatch):
    """``arbitrate_max_autotune=auto`` (the default): the max-autotune compile is spent on a graph
    only where the search's own max-autotune attempt came within ``AUTOTUNE_CLOSE`` of its
    winner; far off, or never tried (an entry without attempts), it is not offered."""
    monkeypatch.setattr(arbiter, "_cuda_index", lambda a: 0)   # as on cuda:0
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: "high")   # TF32 allowed
    quick = arbiter.time_in_turns
    monkeypatch.setattr(arbiter, "time_in_turns", lambda fns, a, device, rounds=3: quick(fns, a, device, 3))
    store = CacheStore(tmp_path)
    tuned = "builtin:" + arbiter.AUTOTUNED
    cases = {"close": {"baseline:inductor": 1.0, tuned: 1.35},
             "far": {"baseline:inductor": 1.0, tuned: 2.5},
             "untried": {"baseline:inductor": 1.0}, "no-attempts": None}
    for name, search_ms in cases.items():
        w = _slow_winner(0.0)
        w.origin = "baseline:inductor"
        if search_ms is not None:
            w.search_ms = search_ms
        fn = arbiter.serve(w, _gm(), args, 2, store, f"k-{name}", "cpu", graphed="auto",
                           autotuned="auto")
        torch.testing.assert_close(fn(*args)[0], torch.relu(args[0] @ args[1]) * 2.0)
        considered = json.loads((store.root / "serve" / f"k-{name}.json").read_text())["considered"]
        assert (arbiter.AUTOTUNED in considered) == (name == "close"), (name, considered)


def test_max_autotune_auto_is_not_spent_where_its_templates_miss_the_tensor_cores(tmp_path, args,
                                                                               monkeypatch):
    """Strict float32 (TF32 not allowed): max-autotune's Triton templates would run on CUDA cores
    against cuBLAS/cuDNN, so even a close search attempt does not buy its compile; bf16 operands,
    or TF32 allowed, do."""
    monkeypatch.setattr(arbiter, "_cuda_index", lambda a: 0)
    quick = arbiter.time_in_turns
    monkeypatch.setattr(arbiter, "time_in_turns", lambda fns, a, device, rounds=3: quick(fns, a, device, 3))
    store = CacheStore(tmp_path)
    assert all(a.dtype == torch.float32 for a in args)
    for name, precision, dtype, offered in [("strict", "highest", torch.float32, False),
                                           ("tf32", "high", torch.float32, True),
                                           ("bf16", "highest", torch.bfloat16, True)]:
        monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda p=precision: p)
        w = _slow_winner(0.0)
        w.origin = "baseline:inductor"
        w.search_ms = {"baseline:inductor": 1.0, "builtin:" + arbiter.AUTOTUNED: 1.2}
        a = [x.to(dtype) for x in args]
        lines = []
        monkeypatch.setattr(arbiter.logger, "info", lambda msg, *fmt: lines.append(msg % fmt))
        arbiter.serve(w, _gm(), a, 2, store, f"k-{name}", "cpu", graphed="auto", autotuned="auto")
        considered = json.loads((store.root / "serve" / f"k-{name}.json").read_text())["considered"]
        assert (arbiter.AUTOTUNED in considered) == offered, (name, considered)
        # the user is told before the (long) max-autotune build starts, and only then
        progress = [ln for ln in lines if ln.startswith("arbiter: timing")]
        assert len(progress) == 1 and ("max-autotune tunes" in progress[0]) == offered, lines


def test_an_entry_gives_the_arbiter_its_searchs_accepted_times():
    from torch_cudal1.serve.graph_runner import _search_times
    meta = {"attempts": [
        {"candidate": {"origin": "baseline:inductor"}, "verdict": {"accepted": True},
         "timing": {"median_ms": 1.07}},
        {"candidate": {"origin": "builtin:inductor-max-autotune"}, "verdict": {"accepted": True},
         "timing": {"median_ms": 1.33}},
        {"candidate": {"origin": "builtin:cudagraph"}, "verdict": {"accepted": False},
         "timing": {"median_ms": 0.5}},                       # refused: never a reference
        {"candidate": {"origin": "llm:r1s0"}, "verdict": {"accepted": True}, "timing": None}]}
    assert _search_times(meta) == {"baseline:inductor": 1.07, "builtin:inductor-max-autotune": 1.33}
    assert _search_times({}) == {}
