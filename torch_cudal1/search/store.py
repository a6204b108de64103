"""A search's result written as the immutable cache entry of its key (the transaction's store
step): the winner's source, its built artefacts, the test vectors and the metadata whose field
names (``winner.origin``, ``summary``, ``attempts``) outside tools read."""
from __future__ import annotations

import shutil
from pathlib import Path

import torch

from ..cache.key import environment_fingerprint
from ..cache.store import ARTIFACTS, VECTORS, WINNER, CacheEntry, CacheStore
from ..cache.winner import needs_build, record_inductor_cache
from ..log import logger
from ..task import Task
from .loop import SearchResult


def _vectors(inputs: list | None, outputs, limit_mb: float) -> dict | None:
    if inputs is None:
        return None
    tensors = {}   # written by save_tensors: an output that is a view of an input, a copy
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            tensors[f"input.{i}"] = x
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for i, y in enumerate(outs or []):
        if isinstance(y, torch.Tensor):
            tensors[f"output.{i}"] = y
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    return tensors if size <= limit_mb * 2**20 else None


def store_search_result(store: CacheStore, key: str, fields: dict, task: Task,
                        result: SearchResult, device: str, *, outputs=None,
                        capture_limit_mb: float = 64.0) -> CacheEntry:
    """Write the winner of ``result`` as the immutable entry ``key`` (atomic rename)."""
    staging = store.new_staging(key)
    try:
        task.write(staging)
        (staging / WINNER).write_text(result.winner.candidate.source)
        build = result.winner_dir / "build" if result.winner_dir else None
        if build is not None and build.is_dir():
            shutil.copytree(build, staging / ARTIFACTS, symlinks=False,
                            ignore=shutil.ignore_patterns("*.o", "*.ninja*", ".ninja*", "lock"))
        vectors = _vectors(task.real_inputs, outputs, capture_limit_mb)
        if vectors:
            from ..tensor_files import save_tensors
            save_tensors(vectors, str(staging / VECTORS))
        prepared = _record_build(staging, result.winner.candidate.source, device, task)
        w = result.winner
        meta = {
            "fields": fields,
            "environment": environment_fingerprint(device),
            "task_name": task.name,
            "winner": {"origin": w.candidate.origin, "round": w.candidate.round,
                       "sample": w.candidate.sample, "timing": w.timing.to_json() if w.timing else None,
                       "verdict": w.verdict.to_json(), "speedup_vs_eager": w.speedup_vs_eager,
                       "speedup_vs_inductor": w.speedup_vs_inductor},
            "summary": result.summary(),
            "attempts": [a.to_json() for a in result.attempts],
        }
        entry = store.commit(key, staging, meta)
        entry.prepared = prepared
        return entry
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _record_build(staging: Path, source: str, device: str, task: Task):
    """A winner that compiles on its first call is built here, once, and inductor's artefacts
    for it go into the entry (``cache.winner.record_inductor_cache``). Returns the built forward,
    or None. Never fails the store: without them a warm start compiles the winner itself."""
    if not needs_build(source):
        return None
    try:
        inputs = task.real_inputs
        if inputs is None:
            inputs = list(task.load().get_inputs())
        # the same tensors without the caller's torch._dynamo.mark_dynamic (an attribute of the
        # tensor object): the winner is built at these exact sizes, as it was verified
        inputs = [_unmarked_alias(x) for x in inputs]
        return record_inductor_cache(staging, source, device, inputs)
    except Exception as e:  # noqa: BLE001 - an optimisation of later starts, never an error
        logger.info("inductor artefacts of the winner not recorded (%s: %s)", type(e).__name__,
                    str(e).splitlines()[0][:200] if str(e) else "")
        return None


def _unmarked_alias(x):
    """``x``'s storage in a new tensor object of the same kind (a Parameter stays one, and
    requires_grad is kept: both are in inductor's cache key, so the serving process's build of
    the same graph hits what is recorded here)."""
    if not isinstance(x, torch.Tensor):
        return x
    alias = x.detach().requires_grad_(x.requires_grad)
    if isinstance(x, torch.nn.Parameter):
        alias = torch.nn.Parameter(alias, requires_grad=x.requires_grad)
    return alias


__all__ = ["store_search_result"]
