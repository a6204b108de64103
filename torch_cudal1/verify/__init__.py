"""Verification of candidates in child processes (see runner.evaluate).

Parts: ``static`` (first filter on the source), ``runner`` (the parent side: child process,
limits, build cache), ``forkserver`` (children forked from a template with torch imported),
``child`` (build, checks against the references, anti-hack checks, timing),
``compare`` (tolerances), ``guards`` (tamper detection), ``sandbox`` (audit hook, memory limit),
``errors`` (exception -> reason, trimmed build logs).
"""
from .runner import default_build_cache_dir, evaluate, prestart_children

# Raised with each rule that may reject what an earlier verifier accepted, so that a verdict
# kept elsewhere (the KernelBench records' replayed solutions) can tell it is older: 1, outputs
# of separate calls sharing memory (session 21); 2, outputs in another layout than the
# reference's contiguous one (session 22).
RULES = 2

__all__ = ["evaluate", "default_build_cache_dir", "prestart_children", "RULES"]
