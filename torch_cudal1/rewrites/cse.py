"""Common subexpression elimination: the same pure op on the same arguments is computed once."""
from __future__ import annotations

import torch
import torch.fx as fx

from ._util import TRIVIAL, is_pure_call


def _key(value):
    if isinstance(value, fx.Node):
        return ("node", id(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, float):
        return ("float", repr(value))      # -0.0 and 0.0, nan: keep them apart
    if isinstance(value, (bool, int, str, type(None), torch.dtype, torch.device, torch.layout,
                          torch.memory_format)):
        return (type(value).__name__, value)
    return ("repr", type(value).__name__, repr(value))


def run(gm: fx.GraphModule) -> int:
    """Return how many non-trivial duplicate computations were merged."""
    seen: dict = {}
    count = 0
    for n in list(gm.graph.nodes):
        if not is_pure_call(n):
            continue
        k = (n.target, _key(n.args), _key(n.kwargs))
        other = seen.get(k)
        if other is None:
            seen[k] = n
            continue
        n.replace_all_uses_with(other)
        gm.graph.erase_node(n)
        if n.target not in TRIVIAL:
            count += 1
    return count
