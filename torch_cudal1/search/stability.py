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

But every child already times the reference beside its candidate (the judge's clock check
measures the harness on it; ``pair_reference`` reports it as the paired timing): the search has
timed eager's code again in each later child. ``paired_drift`` takes the eager baseline's timing
against those: against their median, and against each other baseline's child (where a claim
against that baseline was measured). The baselines are timed once more in children of their own
(``confirm_baselines``: more verifications) only where that drift is over the bound, or where
no later child timed the reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# Two timings of one baseline further apart than this (slower / faster) leave nothing decidable:
# a 1.5x drift of the same code is larger than the gains a search usually finds.
NOISY_RATIO = 1.5
# Later children's timings of the reference that ``paired_drift`` needs.
PAIRED_MIN = 1


@dataclass
class HostNoise:
    """The largest drift between a baseline's two timings."""
    ratio: float              # slower / faster of that baseline's two medians (inf: it failed)
    origin: str               # that baseline
    first_ms: float
    again_ms: float | None    # None: the second run was rejected (``reason``)
    reason: str = ""
    decided: bool = True      # the search could still tell its winner apart (set by the search)
    paired: int = 0           # the second timing from this many later children's (paired_drift)

    @property
    def noisy(self) -> bool:
        return not self.ratio <= NOISY_RATIO

    def describe(self) -> str:
        if self.again_ms is None:
            return f"{self.origin} passed once and was rejected when run again ({self.reason})"
        then = (f"then {self.again_ms:.4f} ms in the children after it ({self.paired})"
                if self.paired else f"then {self.again_ms:.4f} ms")
        return f"{self.origin} timed {self.first_ms:.4f} ms, {then} (x{self.ratio:.2f} apart)"

    def to_json(self) -> dict:
        return {"ratio": None if math.isinf(self.ratio) else round(self.ratio, 4),
                "baseline": self.origin, "first_ms": self.first_ms, "again_ms": self.again_ms,
                "bound": NOISY_RATIO, "noisy": self.noisy, "decided": self.decided} | (
            {"paired_children": self.paired} if self.paired else {})


def _reference_ms(timing) -> float | None:
    """The reference's median timing in that attempt's child (paired or not)."""
    return timing.extra.get("paired_ref_ms") or timing.extra.get("reference_ms")


def paired_drift(attempts: list) -> HostNoise | None:
    """The eager baseline's timing against the reference's timings in the other children (each
    timed the reference, eager's code, beside its candidate): against their median (a second
    timing that one disturbed child does not move), and against the timing in each other
    baseline's child (which saw the host as that baseline's timing did), whichever is further;
    the second timing is kept as the baseline's (``extra["confirmed"]``, ``"paired"``: how many
    children). None where there is no eager baseline or fewer than ``PAIRED_MIN`` such
    timings: then the baselines are timed again instead."""
    eager = next((a for a in attempts if a.timing is not None and a.candidate.identity.is_baseline
                  and a.candidate.identity.base == "eager"), None)
    if eager is None or not eager.timing.median_ms > 0:
        return None
    first = eager.timing.median_ms
    later = [(a, _reference_ms(a.timing)) for a in attempts
             if a is not eager and a.timing is not None and _reference_ms(a.timing)]
    if len(later) < PAIRED_MIN:
        return None
    ms = sorted(m for _, m in later)
    mid = len(ms) // 2
    again = ms[mid] if len(ms) % 2 else (ms[mid - 1] + ms[mid]) / 2
    # each other baseline's own child, and the median of all
    seen = [m for a, m in later if a.candidate.identity.is_baseline] + [again]
    again = max(seen, key=lambda m: max(m / first, first / m))
    lo, hi = sorted((first, again))
    eager.timing.extra["confirmed"] = {"median_ms": again, "paired": len(later)}
    return HostNoise(hi / lo, eager.candidate.origin, first, again, paired=len(later))


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
