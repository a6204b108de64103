"""Served winners checked against the user's own graph, in the serving process.

A candidate is verified in a sandbox (``verify/``). One that tells the sandbox apart from a serving
process (its namespaces, process ids, call stack, environment) could answer right only there,
and nothing in the sandbox can see that. So the serving process checks too (option
``serve_check``): the first call of each winner it loads, and with ``serve_check=N`` about one
call in N after that (at random), also runs the user's graph eagerly on the same inputs, and the
two answers are compared:

* first at the verifier's tolerances for the precision the entry was verified at, widened
  ``SERVE_SLACK`` times (eager's own rounding is inside this comparison, and the call's inputs
  are not the verifier's draws);
* where that fails, exactly as the verifier compares, against the graph run in float64.

A winner that fails both is quarantined, its key recorded as a failed search (the same search
would serve it again; ``cudal1 cache rm KEY`` lets it be searched), and the fallback serves this
call, with its answer, and every later one, with one warning.

Not checked: winners that are the user's own graph (the eager and inductor baselines), and calls
made while a CUDA graph is being captured (the comparison waits for the device). The check runs
in the winner's own process: it catches a winner that answers differently when served, not one
that tampers with the check itself (a cache entry is code: docs/verification.md).
"""
from __future__ import annotations

import random

import torch

from ..counters import STATS
from ..log import logger
from ..origin import Origin

SERVE_SLACK = 4.0


def wanted(origin: str, setting: str, foreign: bool = False) -> bool:
    """Whether a winner of ``origin`` is checked: not the baselines, which are the user's graph
    itself (eagerly, or through inductor), unless the entry came from another machine
    (``foreign``), whose record of what made it is its producer's word."""
    if setting == "off":
        return False
    if foreign:
        return True
    if not origin:
        return False
    try:
        return Origin.parse(str(origin)).engine != "baseline"
    except Exception:  # noqa: BLE001 - an origin not understood is checked
        return True


def runs_convolution(gm: torch.fx.GraphModule) -> bool:
    return any(n.op == "call_function" and "convolution" in str(n.target) for n in gm.graph.nodes)


class Checked:
    """``winner`` (called as ``winner(*full)``) with its first call, and about one in ``every``
    later calls (0: none), checked against ``reference`` (the user's graph) on the same inputs.
    ``on_mismatch(why)`` is told once, and the fallback ``fallback`` serves from then on;
    ``on_done()`` once no call is left to check (the caller may then call ``winner`` itself)."""

    def __init__(self, winner, reference, fallback, *, every: int, precision: str,
                 written: set, on_mismatch, on_done=None):
        self.winner, self.reference, self.fallback = winner, reference, fallback
        self.every, self.precision, self.written = every, precision, written
        self.on_mismatch, self.on_done = on_mismatch, on_done
        self.failed = False
        self._first = True
        # what the runner and the arbiter read off a winner
        for name in ("origin", "key", "search_ms", "forward"):
            if hasattr(winner, name):
                setattr(self, name, getattr(winner, name))

    def __call__(self, *full):
        if self.failed:
            return self.fallback(*full)
        if self._first or (self.every and random.random() * self.every < 1.0):
            if not _capturing(full):
                return self._checked(full)
        return self.winner(*full)

    def _checked(self, full):
        from ..harness.real_inputs import clone_layout   # loaded where winners are checked only
        ref_in = [clone_layout(x) if i in self.written and isinstance(x, torch.Tensor) else x
                  for i, x in enumerate(full)]
        # the written inputs as they were, for the float64 run should it be needed
        before = [clone_layout(x) if i in self.written and isinstance(x, torch.Tensor) else x
                  for i, x in enumerate(full)] if self.written else full
        try:
            with torch.no_grad():
                expected = _as_list(self.reference(*ref_in))
        except Exception as e:  # noqa: BLE001 - out of memory beside the winner, say: no verdict
            logger.debug("serve check skipped: the graph itself raised (%s: %s)",
                         type(e).__name__, e)
            self._first = False
            return self.winner(*full)
        got = self.winner(*full)   # where it raises, its first call is still to be checked
        self._first = False
        problem = self._differs(expected, _as_list(got), ref_in, full, before)
        STATS["serve_checks"] += 1
        if problem is None:
            if not self.every and self.on_done is not None:
                self.on_done()      # nothing more to check: the winner itself serves from now on
            return got
        STATS["serve_check_failed"] += 1
        self.failed = True
        try:
            self.on_mismatch(problem)
        finally:
            # the graph's answer, and its writes, as the user's own graph made them
            for i in self.written:
                if isinstance(full[i], torch.Tensor):
                    full[i].copy_(ref_in[i])
        return type(got)(expected) if isinstance(got, (tuple, list)) else expected[0]

    def _differs(self, expected: list, got: list, ref_in: list, full: list,
                 before: list) -> str | None:
        from ..verify.compare import compare, tolerances
        if len(got) != len(expected):
            return f"{len(got)} outputs, the graph gives {len(expected)}"
        for i in sorted(self.written):
            # what the graph writes is data moved (a cache updated): no second chance in float64
            if isinstance(full[i], torch.Tensor):
                norm, elem = tolerances(full[i].dtype, self.precision)
                reason, detail, _ = compare(ref_in[i], full[i], precision=self.precision,
                                            norm_tol=SERVE_SLACK * norm,
                                            elem_tol=SERVE_SLACK * elem)
                if reason != "ok":
                    return f"input {i}, which the graph writes: {reason}: {detail}"
        detail = ""
        for j, (e, g) in enumerate(zip(expected, got)):
            kw = {}
            if isinstance(e, torch.Tensor) and (e.is_floating_point() or e.is_complex()):
                norm, elem = tolerances(e.dtype, self.precision)
                kw = {"norm_tol": SERVE_SLACK * norm, "elem_tol": SERVE_SLACK * elem}
            elif isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor) \
                    and e.shape == g.shape and e.dtype == g.dtype:
                # near-ties (an argmax over reordered float sums) may flip a few values
                wrong = int((e != g).sum())
                if wrong > max(1, e.numel() // 1000):
                    reason = "mismatch"
                    detail = f"output {j}: {wrong} of {e.numel()} integer/bool values differ"
                    break
                continue
            reason, detail, _ = compare(e, g, precision=self.precision, **kw)
            if reason != "ok":
                break
        else:
            return None
        hi = _float64(self.reference, before, self.written)
        if hi is None:
            return f"{reason}: {detail}"
        from ..verify.float64_trust import distrust
        if distrust(expected, hi):
            return f"{reason}: {detail}"
        reason, detail, _ = compare(expected, list(got), hi, precision=self.precision)
        return None if reason == "ok" else f"{reason}: {detail} (against float64)"


def _float64(reference, inputs: list, written: set):
    """The graph's answer with its floating inputs in float64, or None where it does not run so."""
    from ..harness.real_inputs import clone_layout
    try:
        xs = [clone_layout(x, dtype=torch.float64)
              if isinstance(x, torch.Tensor) and x.is_floating_point() else
              (clone_layout(x) if i in written and isinstance(x, torch.Tensor) else x)
              for i, x in enumerate(inputs)]
        with torch.no_grad():
            return _as_list(reference(*xs))
    except Exception:  # noqa: BLE001 - a graph that only runs in its own dtype
        return None


def _as_list(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _capturing(full) -> bool:
    if not torch.cuda.is_available():
        return False
    try:
        return any(isinstance(x, torch.Tensor) and x.is_cuda for x in full) and \
            torch.cuda.is_current_stream_capturing()
    except Exception:  # noqa: BLE001
        return False


def describe(origin) -> str:
    try:
        return str(Origin.parse(str(origin)))
    except Exception:  # noqa: BLE001
        return str(origin)


def warn_mismatch(store, key: str, origin, why: str, fallback: str) -> None:
    """One warning. The entry is moved out of the cache, and the key recorded as a failed
    search (``cache/failures.py``): the same search would find the same winner, verify it in the
    same sandbox and serve it again, so later processes run the fallback until ``cudal1 cache rm
    KEY``."""
    from ..cache import failures
    logger.warning("served winner %s of %s answered a served call unlike the graph itself (%s): "
                   "quarantined and not searched again (`cudal1 cache rm %s` lets it be); running "
                   "the %s fallback", describe(origin), key, why, key[:16], fallback)
    what = f"served winner {describe(origin)} answered a served call unlike the graph: {why}"
    failures.record(store, key, "serve_check", what)
    try:
        store.quarantine(key, f"a served call's answer differed from the graph's: {why}",
                         quiet=True)
    except Exception as e:  # noqa: BLE001 - the fallback serves whatever became of the entry
        logger.debug("quarantining %s failed: %s", key, e)
