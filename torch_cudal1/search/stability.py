"""Is the host quiet enough to decide? Every speedup a search claims is a ratio of timings taken
in different child processes minutes apart; a host whose load changes in between (another
process's work, a frequency change) moves them by more than any gain: an eager baseline timed at
23.95 ms in one child and 0.046 ms in the next turned an MLP's inductor into "x384 over eager".

So before a win is declared, each baseline the claims rest on is timed once more, after the
candidates and in the reverse order of the first pass; the larger of the baselines' drifts
between their two timings (``HostNoise.ratio``) is what the host did to the same code. A
candidate must beat the best baseline (at its faster timing: a disturbance only adds time) by
more than that drift. Where the drift is over ``NOISY_RATIO`` and no candidate clears it, the
host is too noisy to decide: the best baseline is served and no speedup is claimed or cached.

Where every child also times the reference right after its candidate (``pair_reference``, on by
default on a GPU), the search has already timed the same code again in each later child:
``paired_drift`` takes the eager baseline's timing against the median of those, and the
baselines are timed once more in children of their own (``confirm_baselines``, two more
verifications) only where that drift is over the bound, or too few children were timed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# Two timings of one baseline further apart than this (slower / faster) leave nothing decidable:
# a 1.5x drift of the same code is larger than the gains a search usually finds.
NOISY_RATIO = 1.5
# Later children's timings of the reference that ``paired_drift`` needs (their median is the
# second timing: one disturbed child among them does not move it).
PAIRED_MIN = 2


@dataclass
class HostNoise:
    """The largest drift between a baseline's two timings."""
    ratio: float              # slower / faster of that baseline's two medians (inf: it failed)
    origin: str               # that baseline
    first_ms: float
    again_ms: float | None    # None: the second run was rejected (``reason``)
    reason: str = ""
    decided: bool = True      # the search could still tell its winner apart (set by the search)
    paired: int = 0           # the second timing: the median of this many children's (paired_drift)

    @property
    def noisy(self) -> bool:
        return not self.ratio <= NOISY_RATIO

    def describe(self) -> str:
        if self.again_ms is None:
            return f"{self.origin} passed once and was rejected when run again ({self.reason})"
        then = (f"then a median {self.again_ms:.4f} ms in {self.paired} later children"
                if self.paired else f"then {self.again_ms:.4f} ms")
        return f"{self.origin} timed {self.first_ms:.4f} ms, {then} (x{self.ratio:.2f} apart)"

    def to_json(self) -> dict:
        return {"ratio": None if math.isinf(self.ratio) else round(self.ratio, 4),
                "baseline": self.origin, "first_ms": self.first_ms, "again_ms": self.again_ms,
                "bound": NOISY_RATIO, "noisy": self.noisy, "decided": self.decided} | (
            {"paired_children": self.paired} if self.paired else {})


def paired_drift(attempts: list) -> HostNoise | None:
    """The eager baseline's timing against the median of the reference's timings in the other
    children (``timing.extra["paired_ref_ms"]``: each child timed the reference, the same code
    as eager, right after its candidate), kept as the baseline's second timing
    (``extra["confirmed"]``, ``"paired"``: how many). None where there is no eager baseline or
    fewer than ``PAIRED_MIN`` such timings: then the baselines are timed again instead."""
    eager = next((a for a in attempts if a.timing is not None and a.candidate.identity.is_baseline
                  and a.candidate.identity.base == "eager"), None)
    if eager is None:
        return None
    later = sorted(a.timing.extra["paired_ref_ms"] for a in attempts
                   if a is not eager and a.timing is not None
                   and a.timing.extra.get("paired_ref_ms"))
    if len(later) < PAIRED_MIN:
        return None
    mid = len(later) // 2
    again = later[mid] if len(later) % 2 else (later[mid - 1] + later[mid]) / 2
    first = eager.timing.median_ms
    lo, hi = sorted((first, again))
    eager.timing.extra["confirmed"] = {"median_ms": again, "paired": len(later)}
    return HostNoise(hi / lo if lo > 0 else math.inf, eager.candidate.origin, first, again,
                     paired=len(later))


def confirm_baselines(baselines: list, run_one, run_all=None) -> HostNoise:
    """Time each accepted baseline once more, in the reverse order (``run_one(candidate,
    record=False)`` verifies and times it in a new child; ``run_all(candidates, record=False)``
    all of them, several at once where the device allows); record the second timing beside
    the first (``extra["confirmed"]``); return the largest drift."""
    worst: HostNoise | None = None
    order = list(reversed(baselines))
    agains = (run_all([a.candidate for a in order], record=False, budgeted=False) if run_all
              else [run_one(a.candidate, record=False) for a in order])
    for a, again in zip(order, agains):
        first = a.timing
        if again.timing is None:
            noise = HostNoise(math.inf, a.candidate.origin, first.median_ms, None,
                              again.verdict.reason)
            first.extra["confirmed"] = {"reason": again.verdict.reason}
        else:
            lo, hi = sorted((first.median_ms, again.timing.median_ms))
            noise = HostNoise(hi / lo if lo > 0 else math.inf, a.candidate.origin,
                              first.median_ms, again.timing.median_ms)
            first.extra["confirmed"] = {"median_ms": again.timing.median_ms,
                                        "spread_ms": again.timing.spread_ms}
        if worst is None or noise.ratio > worst.ratio:
            worst = noise
    return worst


def faster_of_two(attempt) -> float:
    """A baseline's faster timing of its two: a disturbance only adds time."""
    t = attempt.timing
    again = t.extra.get("confirmed", {}).get("median_ms")
    return min(t.median_ms, again) if again else t.median_ms
