"""Verification of candidates out of the caller's process (see runner.evaluate).

Parts: ``static`` (first filter on the source), ``runner`` (the parent side: the judge's process,
limits, build cache), ``forkserver`` (judges forked from a template with torch imported),
``judge`` (the reference, the draws, every check, the clock; never runs candidate code),
``os_sandbox`` (bubblewrap around the candidate's worker, ``harness/worker.py``), ``compare``
(tolerances, by float32 precision), ``float64_trust`` and ``references`` (the reference's
answers).
"""
from .runner import default_build_cache_dir, evaluate, prestart_children

# Raised with each rule that may reject what an earlier verifier accepted, so that a verdict
# kept elsewhere (the KernelBench records' replayed solutions) can tell it is older: 1, outputs
# of separate calls sharing memory; 2, outputs in another layout than the reference's contiguous
# one; 3, the judge in its own process (every timed call checked, the clock cross-checked, the
# float32 tolerance by the user's precision).
RULES = 3

__all__ = ["evaluate", "default_build_cache_dir", "prestart_children", "RULES"]
