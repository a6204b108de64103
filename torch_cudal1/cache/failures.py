"""Searches that cannot succeed, remembered beside the cache so that later processes do not
repeat them.

``<cache root>/failed/<key>.json``: a key whose graph could not be rendered as a task, or whose
baselines (the user's own graph, eagerly and through inductor) were all rejected for a reason that
lies in the graph (a crash on fresh inputs, two answers to one input, ...). Every process that met
the key would search it again for the same verdict, paying the baselines' verification each time.
A record holds for the product version that wrote it (a new version may search differently);
``cudal1 cache rm KEY`` removes it. Failures of the machine rather than the graph (a timeout, out
of memory, no sandbox, the engine down) are never recorded.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..version import __version__

# Verdict reasons of a baseline that say the graph itself does not verify: the same on any run.
OF_THE_GRAPH = frozenset({"crash", "mismatch", "nan", "dtype", "shape", "stride",
                          "nondeterministic", "stale_output", "output_aliased", "input_mutated"})


def path(store, key: str) -> Path:
    return Path(store.root) / "failed" / f"{key}.json"


def record(store, key: str, stage: str, why: str) -> None:
    """Remember that ``key``'s search failed at ``stage`` for ``why`` (best effort)."""
    p = path(store, key)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stage": stage, "why": why[:2000], "version": __version__,
                                   "time": time.time()}))
        os.replace(tmp, p)
    except OSError:
        pass


def known(store, key: str) -> dict | None:
    """The record of ``key``'s failed search by this product version, or None."""
    try:
        rec = json.loads(path(store, key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("version") != __version__:
        return None
    return rec


def forget(store, key: str) -> bool:
    try:
        path(store, key).unlink()
        return True
    except OSError:
        return False


def keys(store) -> list[str]:
    d = Path(store.root) / "failed"
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


class KnownFailure(RuntimeError):
    """The key's search failed in an earlier process; it is not searched again."""

    def __init__(self, key: str, rec: dict):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(rec.get("time", 0)))
        super().__init__(f"not searched again (`cudal1 cache rm {key[:16]}` lets it be): an "
                         f"earlier process's search of it failed at {rec.get('stage', 'search')} "
                         f"({when}): {rec.get('why', '?')[:300]}")
