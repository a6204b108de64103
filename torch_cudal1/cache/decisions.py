"""The arbiter's kept decisions: which implementation to serve for a key, beside the cache.

``<cache root>/serve/<key>.json``: what the arbiter measured in the user's process and chose
(``torch_cudal1/serve/arbiter.py``). Data, not code: a decision only names one of a fixed set of
implementations, so one read from a bundle is checked against that set and nothing else.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

# What a decision may name: the search's winner, the user's graph eagerly, through inductor,
# through inductor replayed as a CUDA graph, through inductor max-autotune (and replayed).
CHOICES = ("winner", "eager", "inductor", "inductor+cudagraph", "inductor-max-autotune",
           "inductor-max-autotune+cudagraph")


def decision_path(store, key: str) -> Path:
    return Path(store.root) / "serve" / f"{key}.json"


def read_decision(store, key: str) -> dict | None:
    try:
        return valid(json.loads(decision_path(store, key).read_text()))
    except (OSError, ValueError):
        return None


def valid(decision) -> dict | None:
    """``decision`` when it is well formed (a known choice; the alternatives it considered, if
    listed, a list of known names), else None."""
    if not isinstance(decision, dict) or decision.get("choice", "winner") not in CHOICES:
        return None
    considered = decision.get("considered")
    if considered is not None and (not isinstance(considered, list)
                                   or not all(c in CHOICES for c in considered)):
        return None
    return decision


def write_decision(store, key: str, decision: dict) -> bool:
    """Write-then-rename; False where the cache is read-only (the decision is then made again
    next time)."""
    path = decision_path(store, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(decision, indent=1))
        os.replace(tmp, path)
        return True
    except OSError:
        return False
