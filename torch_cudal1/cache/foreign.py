"""Entries made on another machine (installed from the remote tier, imported from a bundle) are
checked here before their first use, once per machine.

Their hashes only say the files arrived as their producer wrote them; whoever can write to the
remote server or hand over a bundle can write a self-consistent entry with wrong code. So before
serving one, its winner runs, loaded exactly as serving loads it, in a sandboxed child
(``vectors.run_winner``) on the entry's stored test inputs (which must be inputs of its key) and,
where the caller gives them, on the real call's inputs and on a draw mixed from them; its
outputs are judged in this process against the answers of a reference this machine trusts (the
caller's own graph) where one is given, else against the stored outputs. The stored outputs must
also agree with that reference. Its served calls are then checked as well, whatever its record
says made it (``serve.audit``). A pass is recorded in
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
          inputs: list | None = None, timeout_s: float = 600.0,
          max_vector_bytes: int | None = None) -> tuple[bool, str]:
    """Check ``entry`` (see the module's doc); (passed, what was found).

    ``reference(*inputs)``: this machine's own computation of the entry's graph (the user's
    graph: trusted code, run in this process on copies). ``inputs``: inputs of the real call:
    the winner is also run on them and on a draw mixed from them, so that stored test vectors
    chosen by whoever made the entry are never all it is judged on. Stored vectors larger than
    ``max_vector_bytes`` are not read."""
    from .vectors import (VectorsUnfit, WinnerRunError, compare_outputs, run_winner,
                          stored_vectors)
    STATS["foreign_checks"] += 1
    try:
        vec = stored_vectors(entry.path, device, max_bytes=max_vector_bytes)
    except VectorsUnfit as e:
        return refuse(store, entry, f"its stored test inputs are not inputs of its key ({e})")
    except Exception as e:  # noqa: BLE001 - an unreadable vectors file fails the check
        return refuse(store, entry, f"its test vectors are unreadable ({type(e).__name__}: {e})")
    cases = []      # (what, inputs, expected outputs)
    if vec is not None:
        case_inputs, expected = vec
        if reference is not None:
            mine = _run_reference(reference, case_inputs)
            reason, detail = compare_outputs(mine, expected)
            if reason != "ok":
                return refuse(store, entry, "its stored test outputs are not what this graph "
                                           f"computes on its stored inputs ({reason}: {detail})")
            expected = mine
        cases.append(("its test vectors", case_inputs, expected))
    if reference is not None and inputs is not None:
        for what, xs in (("this call's inputs", _copies(inputs)),
                         ("inputs drawn near this call's", _mixed(inputs))):
            cases.append((what, xs, _run_reference(reference, xs)))
    if not cases:
        return refuse(store, entry, "it has no test vectors and there is no reference to "
                                   "check it against")
    try:
        got = run_winner(entry.path, device, [xs for _, xs, _ in cases], timeout_s=timeout_s,
                         inductor_cache=entry.artifacts_trusted)
    except WinnerRunError as e:
        return refuse(store, entry, f"its winner did not run: {e}")
    for (what, _, expected), outs in zip(cases, got):
        reason, detail = compare_outputs(expected, outs)
        if reason != "ok":
            return refuse(store, entry, f"its winner's outputs on {what} are wrong "
                                       f"({reason}: {detail})")
    mark(store, entry, device, ", ".join(what for what, _, _ in cases))
    STATS["foreign_checked"] += 1
    logger.info("cache entry %s from %s checked against this graph on %s: ok", entry.key,
                _origin(entry), ", ".join(what for what, _, _ in cases))
    return True, "ok"


def _copies(inputs: list) -> list:
    import torch
    from ..harness.real_inputs import clone_layout
    return [clone_layout(x) if isinstance(x, torch.Tensor) else x for x in inputs]


def _mixed(inputs: list, seed: int | None = None) -> list:
    """Copies of ``inputs`` with every floating tensor's values moved: each scaled by a random
    factor in [0.75, 1.25] (zeros, infinities, signs and so masks keep their meaning), then part
    of its slices given other values of the same tensor (``harness.calls.mix``). A draw nobody
    could choose in advance, near the real call's values, on which no value of the stored or
    the real inputs is left to recognise."""
    import torch
    from ..harness.calls import mix
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    g = torch.Generator().manual_seed(seed)
    out = []
    for x in _copies(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            scale = torch.rand(x.shape, generator=g, dtype=torch.float32) * 0.5 + 0.75
            moved = (x * scale.to(device=x.device, dtype=x.dtype)).to(x.dtype)
            flat = moved.reshape(-1)
            other = flat[torch.randperm(flat.numel(), generator=g).to(x.device)].view(x.shape)
            x = mix(moved, other, seed)
        out.append(x)
    return out


def _run_reference(reference, inputs: list) -> list:
    import torch
    with torch.no_grad():
        out = reference(*_copies(inputs))
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
