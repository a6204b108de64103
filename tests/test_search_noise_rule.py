"""The search's rule for a winner: faster than the best baseline beyond the measured noise."""
from torch_cudal1 import search
from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict


def _attempt(median, spread, n=200):
    return Attempt(Candidate("", "builtin:x"), Verdict.ok(), Timing(median, spread, n))


def test_a_clearly_faster_launch_bound_candidate_wins_despite_wide_spreads():
    # session 6's KernelBench L2_88: a replay at 0.047 ms against inductor at 0.138 ms lost under
    # the old margin (the spreads themselves); 200 calls each pin both medians down well enough
    assert search.beats(_attempt(0.047, 0.10), _attempt(0.138, 0.10))


def test_within_the_medians_uncertainty_or_the_minimum_gain_the_baseline_stays():
    # 10% faster, but from 10 wide-spread calls each: the medians' intervals overlap
    assert not search.beats(_attempt(0.90, 0.5, n=10), _attempt(1.00, 0.5, n=10))
    # the same gap measured over many calls is real
    assert search.beats(_attempt(0.90, 0.5, n=400), _attempt(1.00, 0.5, n=400))
    # however tight, 1% is below the minimum gain; slower never wins
    assert not search.beats(_attempt(0.99, 0.0), _attempt(1.00, 0.0))
    assert not search.beats(_attempt(1.10, 0.0), _attempt(1.00, 0.0))
