"""Entries made on another machine (installed from the remote tier, imported from a bundle) are
checked here before their first use, once per machine.

Their hashes only say the files arrived as their producer wrote them; whoever can write to the
remote server or hand over a bundle can write a self-consistent entry with wrong code. So before
serving one, its winner runs, loaded exactly as serving loads it, in a sandboxed child
(``vectors.run_winner``) on the entry's stored test inputs (or, without them, on the caller's
inputs), and its outputs are judged in this process against the answers of a reference this
machine trusts (the caller's own graph) where one is given, else against the stored outputs.
The stored outputs must also agree with that reference. A pass is recorded in
``<root>/checked/<key>.json`` (bound to the entry's file hashes, so a replaced entry is checked
again); a failure quarantines the entry with one warning, and the remote tier does not offer that
blob again in this process. Signing (``remote_secret``) remains the way to trust a producer.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

from ..counters import STATS
from ..log import logger
from .store import CacheEntry, CacheStore

CHECKED = "checked"


def _digest(entry: CacheEntry) -> str:
    return hashlib.sha256(json.dumps(entry.meta.get("manifest") or {}, sort_keys=True)
                          .encode()).hexdigest()


def _marker(store: CacheStore, key: str):
    return store.root / CHECKED / f"{key}.json"


def is_checked(store: CacheStore, entry: CacheEntry) -> bool:
    try:
        rec = json.loads(_marker(store, entry.key).read_text())
    except (OSError, ValueError):
        return False
    return rec.get("manifest") == _digest(entry)


def needs_check(store: CacheStore, entry: CacheEntry) -> bool:
    """True for an entry from another machine not yet checked here."""
    return entry.foreign is not None and not is_checked(store, entry)


def _origin(entry: CacheEntry) -> str:
    f = entry.foreign or {}
    return f"{f.get('via', 'bundle')} {f.get('from', '?')}"


def check(store: CacheStore, entry: CacheEntry, device: str, *, reference=None,
          inputs: list | None = None, timeout_s: float = 600.0) -> tuple[bool, str]:
    """Check ``entry`` (see the module's doc); (passed, what was found).

    ``reference(*inputs)``: this machine's own computation of the entry's graph (the user's
    graph: trusted code, run in this process). ``inputs``: inputs of the real call, used when the
    entry stores no test vectors."""
    from .vectors import WinnerRunError, compare_outputs, run_winner, stored_vectors
    STATS["foreign_checks"] += 1
    try:
        vec = stored_vectors(entry.path, device)
    except Exception as e:  # noqa: BLE001 - an unreadable vectors file fails the check
        return refuse(store, entry, f"its test vectors are unreadable ({type(e).__name__}: {e})")
    if vec is not None:
        case_inputs, expected = vec
        if reference is not None:
            mine = _run_reference(reference, case_inputs)
            reason, detail = compare_outputs(mine, expected)
            if reason != "ok":
                return refuse(store, entry, "its stored test outputs are not what this graph "
                                           f"computes on its stored inputs ({reason}: {detail})")
            expected = mine
    elif reference is not None and inputs is not None:
        case_inputs, expected = list(inputs), _run_reference(reference, inputs)
    else:
        return refuse(store, entry, "it has no test vectors and there is no reference to "
                                   "check it against")
    try:
        got = run_winner(entry.path, device, case_inputs, timeout_s=timeout_s)
    except WinnerRunError as e:
        return refuse(store, entry, f"its winner did not run: {e}")
    reason, detail = compare_outputs(expected, got)
    if reason != "ok":
        return refuse(store, entry, "its winner's outputs on its test vectors are wrong "
                                   f"({reason}: {detail})")
    mark(store, entry, device, "vectors" if vec is not None else "call inputs")
    STATS["foreign_checked"] += 1
    logger.info("cache entry %s from %s checked against its test vectors: ok", entry.key,
                _origin(entry))
    return True, "ok"


def _run_reference(reference, inputs: list) -> list:
    import torch
    with torch.no_grad():
        out = reference(*inputs)
    return [out] if isinstance(out, torch.Tensor) else list(out)


def mark(store: CacheStore, entry: CacheEntry, device: str, how: str) -> None:
    """Record that ``entry`` (these very files) passed its check here (``how``: against what)."""
    path = _marker(store, entry.key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"manifest": _digest(entry), "device": device, "with": how,
                                   "at": time.time(), "from": entry.foreign}, default=str))
        os.replace(tmp, path)
    except OSError:
        pass    # a read-only cache: the check runs again in the next process


def refuse(store: CacheStore, entry: CacheEntry, why: str) -> tuple[bool, str]:
    """Quarantine ``entry`` with one warning that says why; (False, why)."""
    STATS["foreign_refused"] += 1
    logger.warning("cache entry %s from %s refused: %s; quarantined, not served", entry.key,
                   _origin(entry), why)
    remote = getattr(store, "remote", None)
    blob = (entry.foreign or {}).get("blob")
    if remote is not None and blob:
        remote.forget(entry.key, blob)       # not fetched again by this process
    store.quarantine(entry.key, f"refused on first use: {why}", quiet=True)
    return False, why


__all__ = ["check", "is_checked", "mark", "needs_check", "refuse"]
