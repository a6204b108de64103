"""The model-free built-in engine.

Round 1 proposes what the task's own graph allows:

* ``builtin:rewrite`` — the task's ATen graph with exact rewrites applied (diagonal products as
  broadcasts, matrix-chain reassociation, value-range folding, size-1 reductions, dropout/CSE/dead
  code removal, fused attention, transposed convolutions as plain ones, average pools as
  depthwise convolutions), run eagerly, and
  ``builtin:rewrite+inductor`` — the same graph through ``torch.compile``. Only when a rewrite
  fired: otherwise they are the baselines again. Where a rewrite that only moves work to other
  kernels fired (``KERNEL_CHOICE``), the graph with only the others is proposed too, and where
  several such passes fired, each alone with them (through inductor). Such passes put Triton
  templates in the graph (``templates/``, on a GPU: layer and group norms over long rows, and
  float32 attention as flash attention in TF32 — that one only where TF32 may be proposed,
  through inductor, the module's other products in full float32 or TF32: ``TF32_ONLY``).
* on a GPU, ``builtin:cudagraph`` — the reference replayed from a CUDA graph — and
  ``builtin:aoti`` — the reference (or the rewritten graph) through AOTInductor: inductor's
  kernels behind a C++ wrapper, no guards or Python wrapper per call (option ``aoti``).
* ``builtin:inductor-max-autotune`` — the reference through inductor's max-autotune: Triton
  templates for its matrix products and convolutions, epilogues fused, and reductions' block
  sizes, all tuned on this device (option ``max_autotune``: by default on a GPU for graphs with
  such ops, unless they have more distinct product/convolution shapes than one verification's
  time limit can tune).
* ``builtin:tf32``, ``builtin:tf32+inductor``, ``builtin:tf32+inductor-max-autotune`` and, where
  rewrites fired, ``builtin:rewrite(...)+inductor+tf32`` — the same with float32 matrix products
  on TF32 tensor cores, for that module's calls only (option ``tf32``: by default on a GPU for
  graphs with float32 products; they are served only where they pass the float32 tolerance).
* ``builtin:cudnn-benchmark``, ``builtin:cudnn-benchmark+inductor`` and, where rewrites fired,
  ``builtin:rewrite(...)+inductor+cudnn-benchmark`` — the same with cuDNN's autotuning of
  convolution algorithms for that module's calls only (option ``cudnn_benchmark``: by default on
  a GPU for graphs with convolutions).
* ``builtin:channels-last`` and ``builtin:channels-last+cudnn-benchmark`` — the reference with
  its 4-D/5-D parameters, buffers and inputs in the channels-last layout that tensor-core
  convolutions read, outputs contiguous again (option ``channels_last``: by default on a GPU for
  graphs with 2-D or 3-D convolutions).

Round 2 (GPU) wraps the fastest verified non-graph candidate so far (a baseline such as inductor,
or a rewrite) in CUDA-graph replay where it is short, or wherever round 1 measured the graph
launch-bound: the reference in graph replay saved at least a tenth of that candidate's time (then
the fastest inductor-compiled candidate is wrapped too, whatever their length), or where the
reference could not be captured at all, so that nothing was measured. Where the fastest runs its
products in TF32, the fastest full-precision candidate is wrapped too. Later rounds, or
a round with nothing new, return [] so the search stops.

Every candidate is Python source of ``class ModelNew`` and goes through the verifier like any
other; nothing here runs candidate code.
"""
from __future__ import annotations

from ..baselines import baseline_candidate
from ...contracts import Attempt, Candidate
from ...log import logger
from ...origin import Origin
from ..base import Engine, SearchContext
from . import aoti, channels_last, cudagraph, cudnn_benchmark, max_autotune, tf32

# Candidates slower than this (ms) are taken as not launch-bound, unless measured so (below): a
# CUDA graph saves ~µs per kernel.
CUDA_GRAPH_MAX_MS = 5.0
# Where the reference in graph replay saved at least this fraction of the best candidate's time
# over the reference, launches are a real part of the graph's time, however long it runs (a deep
# network on a loaded host: hundreds of kernels at ~10 µs each).
LAUNCH_BOUND_SAVING = 0.1
EAGER, GRAPHED = Origin.baseline("eager"), Origin.builtin("cudagraph")


def launch_saving_ms(history: list[Attempt]) -> float | None:
    """Milliseconds round 1 measured the reference saving in CUDA-graph replay (eager's time less
    ``builtin:cudagraph``'s), or None where either was not measured."""
    ms = {a.candidate.identity: a.timing.median_ms for a in history
          if a.verdict.accepted and a.timing is not None}
    if EAGER in ms and GRAPHED in ms:
        return ms[EAGER] - ms[GRAPHED]
    return None


def _in_tf32(a: Attempt) -> bool:
    """``a``'s candidate rounds float32 products to TF32: the ``tf32`` wrapper, or a rewrite
    whose kernels do (``TF32_ONLY``)."""
    from ...rewrites import TF32_ONLY
    o = a.candidate.identity
    return o.has("tf32") or bool(TF32_ONLY & set(o.rewrites))


def _wrapped_origin(a: Attempt) -> str:
    """The origin of ``a``'s candidate in CUDA-graph replay."""
    return str(a.candidate.identity.wrapped("cudagraph"))


class BuiltinEngine(Engine):
    name = "builtin"
    bounded_by_samples = False     # every candidate the graph allows (a few, never sampled)

    def __init__(self, options=None):
        self.options = options
        self._proposed: set[str] = set()
        self._tunable = False   # the task's graph has products, convolutions or reductions
        self._tuned_shapes = 0  # ... and how many distinct product / convolution shapes to tune
        self._fp32_products = False   # ... float32 matrix products
        self._convolutions = False    # ... convolutions
        self._spatial_convolutions = False   # ... 2-D or 3-D ones

    # -- round 1 -----------------------------------------------------------------------------
    def _rewrite_candidates(self, task, ctx: SearchContext) -> list[Candidate]:
        from ...graph.trace import TraceError, trace_task
        from ...rewrites import KERNEL_CHOICE, NAMES, TF32_ONLY, apply_rewrites
        try:
            traced = trace_task(task, ctx.device)
            self._tunable = max_autotune.has_tunable_ops(traced.gm)
            self._tuned_shapes = max_autotune.tuned_shapes(traced.gm)
            self._fp32_products = tf32.has_fp32_products(traced.gm)
            self._convolutions = cudnn_benchmark.has_convolutions(traced.gm)
            self._spatial_convolutions = channels_last.has_spatial_convolutions(traced.gm)
            allowed = NAMES if self._tf32(ctx) else [n for n in NAMES if n not in TF32_ONLY]
            results = [apply_rewrites(traced.gm, only=allowed)]
            exact_names = [n for n in NAMES if n not in KERNEL_CHOICE]
            chosen = [n for n in results[0].fired if n in KERNEL_CHOICE]
            if chosen:   # and the graph with only exact removals
                exact = apply_rewrites(traced.gm, only=exact_names)
                if exact.fired:
                    results.append(exact)
            # Where several kernel swaps fired, each alone too: one can slow the other's kernels
            # (a transposed convolution rewritten as a plain one ran 15% slower through inductor
            # with cuDNN autotuning beside a pool rewritten as a convolution than alone).
            singles = [apply_rewrites(traced.gm, only=exact_names + [n])
                       for n in chosen] if len(chosen) > 1 else []
        except TraceError as e:
            logger.debug("builtin: no graph for %s: %s", task.name, e)
            return []
        except Exception as e:  # noqa: BLE001 - a rewrite bug must cost a candidate, not the search
            logger.warning("builtin: rewriting %s failed: %s: %s", task.name, type(e).__name__, e)
            return []
        out: list[Candidate] = []
        for result in results:
            out += self._rendered(task, traced, result, ctx)
        for result in singles:   # through inductor only: the eager graphs lose to it (L2_50 2-3x)
            out += self._rendered(task, traced, result, ctx, compiled_only=True)
        return out

    def _rendered(self, task, traced, result, ctx: SearchContext,
                  compiled_only: bool = False) -> list[Candidate]:
        """The rewritten graph run eagerly and through inductor (and AOTInductor); with
        ``compiled_only`` through inductor alone."""
        from ...graph.trace import TraceError, render_candidate_source
        from ...rewrites import TF32_ONLY
        fired = result.fired
        if not fired:
            return []
        what = ",".join(fired)
        meta = {"rewrites": result.counts}
        tf32_only = bool(set(fired) & TF32_ONLY)   # a TF32 kernel: other products TF32 or not
        compiled_only = compiled_only or tf32_only
        out = []
        try:
            eager = render_candidate_source(task, traced, result.gm,
                                            doc=f"cudal1 built-in: rewritten graph ({what})")
            compiled = render_candidate_source(task, traced, result.gm, compile_mode="default",
                                               doc=f"cudal1 built-in: rewritten graph ({what}) "
                                                   "through inductor")
        except TraceError as e:
            logger.debug("builtin: cannot render %s: %s", task.name, e)
            return []
        def rewritten(*wrappers: str) -> Origin:
            return Origin.builtin("rewrite", *wrappers, rewrites=tuple(fired))

        if not compiled_only:
            out.append(Candidate(eager, rewritten(), meta=dict(meta)))
        out.append(Candidate(compiled, rewritten("inductor"), meta=dict(meta)))
        if self._tf32(ctx):
            out.append(Candidate(tf32.wrap(compiled, f"rewritten graph ({what}) through inductor, "
                                                     "float32 products in TF32"),
                                 rewritten("inductor", "tf32"), meta=dict(meta)))
        if self._cudnn_benchmark(ctx) and not tf32_only:
            out.append(Candidate(cudnn_benchmark.wrap(compiled, f"rewritten graph ({what}) through "
                                                                "inductor, cuDNN autotuning"),
                                 rewritten("inductor", "cudnn-benchmark"), meta=dict(meta)))
        if self._aoti(ctx) and not compiled_only:
            out.append(Candidate(aoti.wrap(eager, f"rewritten graph ({what}) through AOTInductor"),
                                 rewritten("aoti"), meta=dict(meta)))
        return out

    def _tf32(self, ctx: SearchContext) -> bool:
        return tf32.enabled(getattr(self.options, "tf32", "auto"), ctx.device, self._fp32_products)

    def _cudnn_benchmark(self, ctx: SearchContext) -> bool:
        return cudnn_benchmark.enabled(getattr(self.options, "cudnn_benchmark", "auto"),
                                       ctx.device, self._convolutions)

    def _aoti(self, ctx: SearchContext) -> bool:
        return aoti.enabled(getattr(self.options, "aoti", "auto"), ctx.device)

    def _first_round(self, task, ctx: SearchContext) -> list[Candidate]:
        cands = self._rewrite_candidates(task, ctx)
        eager = baseline_candidate(task, "eager")
        if ctx.device.startswith("cuda"):
            cands.append(Candidate(cudagraph.wrap(eager.source, "the reference in CUDA-graph replay"),
                                   GRAPHED))
        if self._aoti(ctx):
            cands.append(Candidate(aoti.wrap(eager.source, "the reference through AOTInductor"),
                                   Origin.builtin("aoti")))
        setting = getattr(self.options, "max_autotune", "auto")
        measured = self.options.baseline_names() if self.options is not None else []
        tuned = max_autotune.enabled(setting, ctx.device, self._tunable)
        timeout_s = getattr(self.options, "verify_timeout_s", 300.0)
        if tuned and max_autotune.over_budget(setting, self._tuned_shapes, timeout_s):
            logger.info("builtin: no max-autotune candidates for %s: %d matrix-product/convolution "
                        "shapes to tune would take about %.0f s, over the %.0f s verification "
                        "limit (max_autotune='on' tries anyway)", task.name, self._tuned_shapes,
                        self._tuned_shapes * max_autotune.SECONDS_PER_SHAPE, timeout_s)
            tuned = False
        if tuned and "inductor-max-autotune" not in measured:
            base = baseline_candidate(task, "inductor-max-autotune")
            cands.append(Candidate(base.source, Origin.builtin("inductor-max-autotune")))
        if self._tf32(ctx):
            for name in ("eager", "inductor") + (("inductor-max-autotune",) if tuned else ()):
                base = baseline_candidate(task, name)
                origin = Origin.builtin("tf32", *(() if name == "eager" else (name,)))
                cands.append(Candidate(tf32.wrap(base.source, f"{name}, float32 products in TF32"),
                                       origin))
        if self._cudnn_benchmark(ctx):
            for name in ("eager", "inductor"):
                base = baseline_candidate(task, name)
                origin = Origin.builtin("cudnn-benchmark", *(() if name == "eager" else (name,)))
                cands.append(Candidate(cudnn_benchmark.wrap(base.source, f"{name}, cuDNN autotuning"),
                                       origin))
        if channels_last.enabled(getattr(self.options, "channels_last", "auto"), ctx.device,
                                 self._spatial_convolutions):
            nhwc = channels_last.wrap(eager.source, "the reference, module and inputs in the "
                                                    "channels-last layout")
            cands.append(Candidate(nhwc, Origin.builtin("channels-last")))
            if self._cudnn_benchmark(ctx):
                cands.append(Candidate(cudnn_benchmark.wrap(nhwc, "the reference in the "
                                                                  "channels-last layout, cuDNN "
                                                                  "autotuning"),
                                       Origin.builtin("channels-last", "cudnn-benchmark")))
        return cands

    # -- round 2 -----------------------------------------------------------------------------
    def _graph_round(self, history: list[Attempt], ctx: SearchContext) -> list[Candidate]:
        if not ctx.device.startswith("cuda"):
            return []
        done = {a.candidate.origin for a in history}
        ok = [a for a in history if a.verdict.accepted and a.timing is not None
              and not a.candidate.identity.replays_graph          # already a CUDA graph
              and a.candidate.identity != EAGER]                   # wrapped in round 1 already
        if not ok:
            return []
        ok.sort(key=lambda a: a.timing.median_ms)
        saved = launch_saving_ms(history)
        launch_bound = saved is not None and saved >= LAUNCH_BOUND_SAVING * ok[0].timing.median_ms
        # The reference itself could not be captured (a host-to-device copy in its forward, say),
        # so round 1 measured nothing: its compiled candidates, whose constants are lifted, may
        # capture; the fastest is tried once whatever its length.
        unmeasured = any(a.candidate.identity == GRAPHED and not a.verdict.accepted
                         for a in history)
        if ok[0].timing.median_ms > CUDA_GRAPH_MAX_MS and not (launch_bound or unmeasured):
            return []
        targets = [(ok[0], None)]   # (candidate to wrap, the wrap it backs up)
        if launch_bound:
            # the fewest launches, inductor's fusions, may replay fastest even where launches
            # made them slower than the best in round 1
            targets += [(a, None) for a in ok if a.candidate.identity.compiled][:1]
        if _in_tf32(ok[0]):
            # TF32 passes the float32 tolerance with little to spare, and its replay is verified
            # on other draws: where that fails, the fastest full-precision candidate's replay
            # may still win (a graph whose TF32 replay failed once on 1 element in 131072 served
            # a result 1.8x slower with only the TF32 wrap tried)
            targets += [(a, _wrapped_origin(ok[0])) for a in ok
                        if not _in_tf32(a)][:1]
        out = []
        for best, backs_up in targets:
            origin = _wrapped_origin(best)
            if origin in done:
                continue
            done.add(origin)
            meta = {"wraps": best.candidate.origin} | ({"backs_up": backs_up} if backs_up else {})
            out.append(Candidate(cudagraph.wrap(best.candidate.source,
                                                f"{best.candidate.origin} in CUDA-graph replay"),
                                 origin, meta=meta))
        return out

    def propose(self, task, history, ctx: SearchContext) -> list[Candidate]:
        if ctx.round == 1:
            cands = self._first_round(task, ctx)
        elif ctx.round == 2:
            cands = self._graph_round(history, ctx)
        else:
            cands = []
        fresh = [c for c in cands if c.source_hash not in self._proposed]
        self._proposed.update(c.source_hash for c in fresh)
        return fresh
