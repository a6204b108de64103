"""Verification of candidates in child processes (see runner.evaluate).

Parts: ``static`` (first filter on the source), ``runner`` (the parent side: child process,
limits, build cache), ``forkserver`` (children forked from a template with torch imported),
``child`` (build, checks against the references, anti-hack checks, timing),
``compare`` (tolerances), ``guards`` (tamper detection), ``sandbox`` (audit hook, memory limit),
``errors`` (exception -> reason, trimmed build logs).
"""
from .runner import default_build_cache_dir, evaluate, prestart_children

__all__ = ["evaluate", "default_build_cache_dir", "prestart_children"]
