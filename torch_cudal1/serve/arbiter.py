"""The winner against the user's own graph, in the user's process, before it is served.

The search verifies and times candidates on the graph after AOT autograd: ATen ops, weights as
plain inputs, in a child process, caches cold. The user's own alternatives start from the graph
before it. Run eagerly, Dynamo's graph is the user's own ops (cuDNN batch norm, in-place
activations); compiled by inductor, it is exactly what ``torch.compile``'s default gives. On real
models these can beat the best the search measured on the ATen graph by a factor of two: the
search times each graph cold, in a child, without the fusions inductor finds across the module
(ResNet-18 fp32, batch 32: served winner 2.82 ms, inductor on the module 1.29 ms). So, once per
graph and device, the search's winner, the user's graph eagerly and through inductor are timed
here on the real inputs, in turns, caches warm as when serving: inductor is served unless
another is clearly faster than it in every round (``choose``); an alternative must also agree
with the winner's outputs. The decision is kept beside the cache entry (``serve/<key>.json``): a
cache hit reads it instead of timing. On a GPU inductor's code replayed as one CUDA graph is on
offer too (``arbitrate_cudagraph``): a CUDA graph removes the per-kernel launch cost, which
dominates a transformer block or a small-batch CNN. Measured figures per model:
``benchmarks/results/real_models/<device>/``.

Neither alternative is new code: one is the reference itself, the other the compiler the user
would otherwise run. Only static graphs whose AOT wrapper is an identity are arbitrated (their
runner receives Dynamo's own inputs). In ``cache-only`` mode nothing is timed: a decision kept
where the cache was warmed (bundles carry them) is followed, else the cached winner is served;
an inductor choice is re-created through inductor, which reads its own cache, as an inductor
winner is.
"""
from __future__ import annotations

import time

import torch

from ..cache.decisions import read_decision, write_decision
from ..contracts import Timing
from ..log import logger
from ..options import auto_on_gpu
from ..origin import Origin

WINNER, EAGER, INDUCTOR = "winner", "eager", "inductor"
INDUCTOR_GRAPHED = "inductor+cudagraph"   # inductor's code replayed as one CUDA graph (GPU only)
AUTOTUNED = "inductor-max-autotune"       # inductor with its templates tuned on the device
AUTOTUNED_GRAPHED = "inductor-max-autotune+cudagraph"
SERVED_AS = {EAGER: "eagerly", INDUCTOR: "through inductor",
             INDUCTOR_GRAPHED: "through inductor as a CUDA graph",
             AUTOTUNED: "through inductor max-autotune",
             AUTOTUNED_GRAPHED: "through inductor max-autotune as a CUDA graph"}


def enabled(setting: str, device: str) -> bool:
    """``auto``: on a GPU (where the gap was measured; on a CPU the extra inductor build of every
    graph costs more than it has been shown to save)."""
    return auto_on_gpu(setting, device)


def _write_decision(store, key: str, decision: dict) -> None:
    if not write_decision(store, key, decision):   # a read-only cache still serves
        logger.debug("arbiter: cannot record the decision for %s", key)


def _time(fn, args: list, device: str):
    """Milliseconds per call as served: the same inputs again and again, caches warm (a served
    model's weights stay in L2 between calls; the search's cold-cache figures rank otherwise)."""
    from ..bench.device_lock import DeviceLock
    from ..bench.timing import time_callable
    from ..bench.timing_cpus import timing_cpus
    lock = DeviceLock(device)
    try:
        with torch.no_grad(), lock.exclusive(), timing_cpus({}):
            return time_callable(fn, [args], device, warmup=2, reps=50, min_reps=5, budget_s=0.3,
                                 flush_l2=False)
    finally:
        lock.close()


ROUNDS = 5


def time_in_turns(fns: dict, args: list, device: str, rounds: int = ROUNDS) -> dict:
    """{name: Timing}: the candidates take turns, round after round, so that a host or device that
    drifts during the measurement biases none of them (``choose`` compares them round by round),
    each round starting with the next one.
    Median of the rounds' medians; the spread is the larger of the rounds' inter-quartile range
    and the range of their medians."""
    per: dict = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):   # the order turns too: going first in a round is no advantage
        for k in names[r % len(names):] + names[:r % len(names)]:
            per[k].append(_time(fns[k], args, device))
    out = {}
    for k, ts in per.items():
        meds = sorted(t.median_ms for t in ts)
        spreads = sorted(t.spread_ms for t in ts)
        out[k] = Timing(median_ms=meds[len(meds) // 2],
                        spread_ms=max(spreads[len(spreads) // 2], meds[-1] - meds[0]),
                        n=sum(t.n for t in ts), method=ts[0].method + "_warm_interleaved",
                        extra={"rounds_ms": [t.median_ms for t in ts]})
    return out


def _same(a, b) -> bool:
    """The verifier's own comparison (dtype- and scale-derived tolerances)."""
    from ..verify.compare import compare
    return compare(a, b)[0] == "ok"


MARGIN = 0.02   # a choice must save at least this fraction over the reference to replace it


def _clear_ratio(t, w) -> float | None:
    """``t``'s time over ``w``'s when it is clearly faster, else None. With
    rounds taken in turns: faster in every round (a drifting host moves both alike) and by the
    margin at the median round; without: faster beyond its own spread."""
    r, wr = t.extra.get("rounds_ms"), w.extra.get("rounds_ms")
    if r and wr and len(r) == len(wr) and len(r) >= 3 and all(b > 0 for b in wr):
        ratios = sorted(a / b for a, b in zip(r, wr))
        median = ratios[len(ratios) // 2]
        return median if ratios[-1] < 1 and median < 1 - MARGIN else None
    if t.median_ms + t.spread_ms < w.median_ms:
        return t.median_ms / w.median_ms
    return None


def choose(times: dict) -> str:
    """What ``torch.compile`` would have given the user — inductor on their graph — unless
    another is clearly faster than it (the fastest of those); without inductor (it failed or
    disagreed), the search's winner on the same terms. Within the noise nothing changes hands:
    on real models the search's ATen-graph winners were never clearly faster than inductor on
    the user's graph, and often slower (``benchmarks/results/real_models/<device>/``)."""
    ref = INDUCTOR if INDUCTOR in times else WINNER
    clear = {k: r for k, t in times.items() if k != ref
             for r in [_clear_ratio(t, times[ref])] if r is not None}
    return min(clear, key=clear.get) if clear else ref


def _alternatives(gm, args: list, graphed: str = "off", autotuned: str = "off") -> dict:
    """Factories: building inductor's version costs a compile, so only when it is timed (once,
    shared by the graphed variant). ``graphed`` (the ``arbitrate_cudagraph`` setting): ``auto``
    and ``on`` offer inductor replayed as a CUDA graph on a GPU — beside torch.compile's own
    cudagraph trees too: the wrapper captures with a cuBLAS workspace of its own, which the
    trees cannot free under it (``benchmarks/results/cudagraph_coexist/<device>/``).
    ``autotuned`` (``arbitrate_max_autotune``): inductor max-autotune as well (``auto``: on a
    GPU, where ``serve`` found the search's own attempt close), replayed as a CUDA graph too
    where ``graphed`` allows."""
    built: dict = {}

    def compiled(name, patches):
        def make():
            if name not in built:
                built[name] = compile_cached(gm, args, patches)
            return built[name]
        return make
    inductor = compiled(INDUCTOR, None)
    alts = {EAGER: lambda: gm.forward, INDUCTOR: inductor}
    index = _cuda_index(args)
    if index is not None and graphed in ("auto", "on"):
        alts[INDUCTOR_GRAPHED] = lambda: as_cuda_graph(inductor())
    if autotuned == "on" or (autotuned == "auto" and index is not None):
        from torch._inductor import list_mode_options
        tuned = compiled(AUTOTUNED, list_mode_options("max-autotune-no-cudagraphs"))
        alts[AUTOTUNED] = tuned
        if index is not None and graphed in ("auto", "on"):
            alts[AUTOTUNED_GRAPHED] = lambda: as_cuda_graph(tuned())
    return alts


def compile_cached(gm, args: list, patches: dict | None = None):
    """``compile_fx`` of Dynamo's graph where inductor's FX graph cache can serve it: on fake
    copies of the inputs, in a tracing context whose fake mode has a shape environment. Called
    on real inputs outside Dynamo, inductor bypasses that cache ("No shape env"), so every warm
    start would compile each arbitrated graph again, max-autotune's code generation included
    (``benchmarks/autotune_reuse.py`` counts the bypasses; ``benchmarks/results/autotune_reuse/``)."""
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    fake = [mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a
            for a in args]
    with torch._guards.tracing(torch._guards.TracingContext(mode)):
        return compile_fx(gm, fake, config_patches=patches)


AUTOTUNE_CLOSE = 2.0   # the search's max-autotune attempt within this factor of its winner


def autotune_came_close(winner) -> bool:
    """``arbitrate_max_autotune=auto``: the search proposed max-autotune (it does for graphs with
    matrix products, convolutions or reductions, where its templates and tuned block sizes can
    differ from inductor's defaults), accepted it at the user's own precision, and timed it within
    ``AUTOTUNE_CLOSE`` of its winner. The bound is wide because the search's figures rank
    launch-bound graphs poorly: it times the ATen graph cold, in a child, without CUDA graphs,
    where the launch cost it measures moves with the host's load (ResNet-18 bf16's inductor:
    1.07 ms in one search, 2.05 ms in the next on the same GPU). The arbiter then times the
    user's graph warm, as served, where max-autotune at 1.24x the search's winner can still be
    the fastest served. Further off, or never proposed, its compile is not spent."""
    ms = getattr(winner, "search_ms", None) or {}
    best = ms.get(str(getattr(winner, "origin", "") or ""))
    tuned = ms.get(str(Origin.builtin(AUTOTUNED)))
    return bool(best and tuned and tuned <= AUTOTUNE_CLOSE * best)


def templates_use_tensor_cores(tensors) -> bool:
    """Whether max-autotune's Triton matrix-product and convolution templates run on tensor cores
    for this graph: bf16/fp16 operands, or float32 with TF32 allowed for matrix products. In
    strict float32 they run on CUDA cores against cuBLAS/cuDNN, and the arbiter's compile
    (minutes of tuning on the user's first call) buys nothing: on ResNet-18 fp32 cuDNN won 4 of
    the 5 convolution autotunes (the best Triton 3x3 at 24% of its speed) after 113 s of tuning,
    and torch.compile max-autotune ran slower than reduce-overhead (``benchmarks/results/real_models/<device>/resnet18_fp32``)."""
    if any(isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)
           for t in tensors):
        return True
    return torch.get_float32_matmul_precision() != "highest"


def _cuda_index(args: list) -> int | None:
    return next((a.device.index or 0 for a in args if isinstance(a, torch.Tensor) and a.is_cuda), None)


def as_cuda_graph(fn):
    """``fn`` replayed as a CUDA graph by the built-in engine's wrapper (the one its candidates
    use, verified by the same tests): weights read in place, activations copied in, fresh
    outputs every call; off the GPU or under autograd it calls ``fn``."""
    from ..engines.builtin.cudagraph import wrap
    src = wrap("import torch\n\n\nclass ModelNew(torch.nn.Module):\n"
               "    def __init__(self, fn):\n        super().__init__()\n        self.fn = fn\n\n"
               "    def forward(self, *args):\n        return self.fn(*args)\n",
               doc="the user's graph through inductor, replayed as a CUDA graph")
    ns: dict = {"__name__": "cudal1_arbiter_graphed"}
    exec(compile(src, "<cudal1 arbiter: graphed inductor>", "exec"), ns)  # our own template
    return ns["ModelNew"](fn)


def _on_own_inputs(fn, n: int):
    """The runner calls implementations with its inputs plus lifted constants; Dynamo's graph
    takes only the inputs."""
    def call(*a):
        return fn(*a[:n])
    call.forward = fn
    return call


def serve(winner, gm, full: list, n_args: int, store, key: str, device: str,
          graphed: str = "off", may_time: bool = True, autotuned: str = "off"):
    """The implementation to serve for this graph (``choose``): the user's graph through
    inductor, or the runner's ``winner``, the user's graph eagerly (or, as ``graphed`` allows,
    inductor's code replayed as a CUDA graph) where one of those is clearly faster here.
    Without ``may_time`` (cache-only serving) a kept decision is followed as it is, and without
    one the winner is served: nothing is timed."""
    args = list(full[:n_args])
    origin = Origin.parse(getattr(winner, "origin", "") or "")
    if autotuned == "auto" and not (autotune_came_close(winner)
                                    and templates_use_tensor_cores(full)):
        autotuned = "off"
    if origin.has(AUTOTUNED):
        # the search's winner is max-autotune's code: compiling it again here would cost a
        # minute per graph for the same kernels
        autotuned = "off"
    alts = _alternatives(gm, args, graphed, autotuned)
    if origin.has(AUTOTUNED) and not origin.has("cudagraph") and INDUCTOR_GRAPHED in alts:
        # ...but replayed as a CUDA graph it is timed here, where launches count as they will
        # (the search's own wrap of it can lose by its noise rule, or not be reached)
        consts = list(full[n_args:])
        alts[AUTOTUNED_GRAPHED] = lambda: as_cuda_graph(lambda *a: winner(*a, *consts))
    decision = read_decision(store, key)
    if (decision is not None and may_time
            and not set(alts) <= set(decision.get("considered", alts))):
        decision = None   # an alternative it never considered (e.g. arbitrate_cudagraph turned on)
    if decision is not None and decision.get("choice", WINNER) not in set(alts) | {WINNER}:
        decision = None   # its choice is not on offer here (arbitrate_cudagraph turned off)
    if decision is not None:
        choice = decision.get("choice", WINNER)
        if choice in alts:
            try:
                return _on_own_inputs(alts[choice](), n_args)
            except Exception as e:  # noqa: BLE001 - the winner is still there
                logger.warning("arbiter: %s for %s failed to build (%s); serving the winner",
                               choice, key, e)
        return winner
    if not may_time:
        return winner
    t0 = time.monotonic()
    # progress: the builds below are compiles of the user's graph, max-autotune's minutes long
    logger.info("arbiter: timing the search's winner for %s against %s%s", key, ", ".join(alts),
                " (max-autotune tunes its kernels on this device first)" if AUTOTUNED in alts else "")
    with torch.no_grad():
        ref = winner(*full)
    built = {WINNER: winner}
    for name, make in alts.items():
        try:
            fn = _on_own_inputs(make(), n_args)
            with torch.no_grad():
                if not _same(fn(*full), ref):
                    logger.warning("arbiter: %s disagrees with the winner on %s; not served", name, key)
                    continue
            built[name] = fn
        except Exception as e:  # noqa: BLE001 - an alternative that fails is no alternative
            logger.info("arbiter: %s unavailable for %s (%s: %s)", name, key, type(e).__name__, e)
    times = time_in_turns(built, list(full), device)
    w = times[WINNER]
    best = choose(times)
    decision = {"choice": best, "winner_origin": getattr(winner, "origin", None),
                "considered": sorted(alts),
                "ms": {k: t.median_ms for k, t in times.items()},
                "spread_ms": {k: t.spread_ms for k, t in times.items()},
                "rounds_ms": {k: t.extra["rounds_ms"] for k, t in times.items()},
                "method": w.method, "device": device, "seconds": round(time.monotonic() - t0, 2)}
    _write_decision(store, key, decision)
    if best != WINNER:
        logger.info("serving the graph %s for %s: %.4f ms here vs the search's winner %.4f ms",
                    SERVED_AS[best], key, times[best].median_ms, w.median_ms)
    return built[best]
