"""Why a lookup misses: the differences between the key fields asked for and near entries.

A key is a hash of its fields (graph, inputs, device, versions, numerics flags), so a miss says
nothing by itself. Entries made from the same graph are found through the store's graph index
(or a scan), and their fields are compared path by path.
"""
from __future__ import annotations

from .store import CacheStore


def diff_fields(want, have, prefix: str = "") -> list[tuple[str, object, object]]:
    """(dotted path, value here, value in the entry) for every leaf that differs."""
    if isinstance(want, dict) and isinstance(have, dict):
        out = []
        for k in sorted(set(want) | set(have), key=str):
            out += diff_fields(want.get(k), have.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
        out = []
        for i, (a, b) in enumerate(zip(want, have)):
            out += diff_fields(a, b, f"{prefix}[{i}]")
        return out
    return [] if want == have else [(prefix, want, have)]


def near_entries(store: CacheStore, fields: dict, *, scan: bool = False,
                 limit: int = 20) -> list[tuple[str, list]]:
    """Entries of the same graph as ``fields`` and how their fields differ, closest first.
    ``scan`` reads every entry's metadata (for the CLI; the runner uses the index only)."""
    graph = fields.get("graph")
    keys = store.keys() if scan else store.keys_for_graph(str(graph))
    found = []
    for key in keys:
        meta = store.read_meta(key)
        if not meta or (meta.get("fields") or {}).get("graph") != graph:
            continue
        found.append((key, diff_fields(fields, meta.get("fields") or {})))
    found.sort(key=lambda kv: len(kv[1]))
    return found[:limit]


def summarize(diffs: list, width: int = 3) -> str:
    """'device.name: here 'cpu', entry 'NVIDIA H100'; ...' (the first ``width`` differences)."""
    diffs = sorted(diffs, key=lambda d: _rank(d[0]))
    parts = [f"{path}: here {_short(a)}, entry {_short(b)}" for path, a, b in diffs[:width]]
    if len(diffs) > width:
        parts.append(f"and {len(diffs) - width} more")
    return "; ".join(parts) or "identical fields (entry missing or corrupt)"


def miss_reason(store: CacheStore, fields: dict) -> str:
    """One line for a miss: near entries of the same graph and why they do not fit."""
    near = near_entries(store, fields)
    if not near:
        return "no entry for this graph"
    key, diffs = near[0]
    more = f" ({len(near)} entries for this graph)" if len(near) > 1 else ""
    return f"nearest entry {key} differs in {summarize(diffs)}{more}"


def fit(fields_here: dict, entry_fields: dict) -> list:
    """Differences that make an entry unusable on this machine, ignoring the graph and inputs
    (those belong to the model, not the machine)."""
    keep = ("device", "versions", "flags")
    return diff_fields({k: fields_here.get(k) for k in keep}, {k: entry_fields.get(k) for k in keep})


# The differences a reader needs first: which machine, then which software, then the rest.
_ORDER = ("device.type", "device.name", "device.capability", "versions.", "flags.", "inputs", "device.")


def _rank(path: str) -> int:
    return next((i for i, p in enumerate(_ORDER) if path.startswith(p)), len(_ORDER))


def _short(v, n: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[: n - 3] + "..."
