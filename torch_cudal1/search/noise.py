"""The noise rules of the search: when a timing is too noisy to rank by, and when a candidate
is faster than a baseline beyond the measured noise.

A median of a launch-bound call moves with whatever else the host and the device do while it is
timed; these rules decide which timings are taken again (``retime_unsound``) and whether a gap
between two medians is a real one (``beats``). The host's drift between the baselines' two
timings, the last rule before any speedup is claimed, is ``stability``.
"""
from __future__ import annotations

import math

from ..contracts import Attempt

# A winner must beat the best baseline by this fraction of its time at least, and beyond both
# medians' uncertainty.
MIN_GAIN = 0.02
# A timing whose inter-quartile spread exceeds this fraction of its median is taken again once
# (the baselines and the fastest candidate, which the winner's choice and its reported speedups
# rest on), and the tighter of the two kept: another process's kernels on the device for the
# whole window can multiply a launch-bound median more than tenfold, with a spread as large as the
# median itself (benchmarks/results/kernelbench/<device>/).
WIDE_SPREAD = 0.25
# A timing during which the host took its CPU away this often (involuntary context switches of
# the timing thread, on its reserved core) is taken again likewise, and the less disturbed kept.
# Each switch parks the thread that launches the kernels, and a launch-bound graph waits with it:
# eager timings with 50 or more were a median 1.10 and up to 2.1 times the median of the same
# task's other eager timings; with under 10, 1.00 (benchmarks/eager_switches.py, figures in
# benchmarks/results/eager_switches/<device>/).
DISTURBED_SWITCHES = 50

# Half-width of a median's ~95% interval in inter-quartile ranges times sqrt(n): the notches of
# a notched box plot (McGill, Tukey & Larsen 1978).
NOTCH = 1.58


def _notch(t) -> float:
    return NOTCH * t.spread_ms / math.sqrt(max(t.n, 1))


def beats(a: Attempt, base: Attempt) -> bool:
    """``a`` is faster than ``base`` beyond the measured noise: its median is lower by at least
    ``MIN_GAIN`` of ``base``'s, and the two medians' intervals do not overlap. (Not the spreads
    themselves: launch-bound calls spread widely, and with them as the margin a CUDA-graph
    replay three times faster than inductor, 0.047 against 0.138 ms over 200 calls each, would
    lose to it; 200 calls pin a median down far tighter than its spread.)"""
    ta, tb = a.timing, base.timing
    gap = tb.median_ms - ta.median_ms
    return gap > MIN_GAIN * tb.median_ms and gap > _notch(ta) + _notch(tb)


def _wide(t) -> bool:
    return t is not None and t.median_ms > 0 and t.spread_ms > WIDE_SPREAD * t.median_ms


def disturbed(t) -> bool:
    return t is not None and t.extra.get("involuntary_switches", 0) >= DISTURBED_SWITCHES


def _quality(t) -> tuple:
    """Smaller is better: undisturbed first, then the smaller relative spread."""
    return disturbed(t), t.spread_ms / t.median_ms if t.median_ms > 0 else math.inf


def _brief(t) -> dict:
    """The other timing of a retimed pair, as ``extra["retimed"]`` keeps it."""
    return {"median_ms": t.median_ms, "spread_ms": t.spread_ms} | (
        {"involuntary_switches": t.extra["involuntary_switches"]}
        if "involuntary_switches" in t.extra else {})


def retime_unsound(settle: list[Attempt], run_one, say) -> bool:
    """Take each wide-spread or disturbed timing of ``settle`` once more (verified again, in a
    new child) and keep the better (``_quality``); the first is kept in ``extra["retimed"]``.
    True where any timing changed."""
    changed = False
    for a in settle:
        if not (_wide(a.timing) or disturbed(a.timing)):
            continue
        again = run_one(a.candidate, record=False)
        first = a.timing
        if again.timing is None or _quality(again.timing) >= _quality(first):
            first.extra["retimed"] = {"kept": "first"} | (
                _brief(again.timing) if again.timing else {"reason": again.verdict.reason})
            continue
        again.timing.extra["retimed"] = {"kept": "second"} | _brief(first)
        a.timing, changed = again.timing, True
        why = (f"{first.extra['involuntary_switches']} involuntary context switches"
               if disturbed(first) else f"spread over {WIDE_SPREAD:.0%} of the median")
        say(f"timed again ({why}): {a.candidate.origin} "
            f"{first.median_ms:.4f} ms ±{first.spread_ms:.4f} -> {a.timing.median_ms:.4f} ms "
            f"±{a.timing.spread_ms:.4f}")
    return changed


__all__ = ["DISTURBED_SWITCHES", "MIN_GAIN", "NOTCH", "WIDE_SPREAD", "beats", "disturbed",
           "retime_unsound"]
