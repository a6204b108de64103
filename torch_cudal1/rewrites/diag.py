"""A product with a diagonal matrix is a broadcast multiply: O(n^2) instead of O(n^3).

``mm(diag(a), B) == a[:, None] * B`` and ``mm(B, diag(a)) == B * a`` (exact: the dropped terms
are products with zeros)."""
from __future__ import annotations

import torch.fx as fx

from ._util import aten, val


def _diag_vector(n):
    """The vector ``a`` when ``n`` is ``diag(a)`` of a 1-D ``a`` on the main diagonal."""
    if not isinstance(n, fx.Node) or n.op != "call_function":
        return None
    if n.target is aten.diag.default:
        offset = n.args[1] if len(n.args) > 1 else n.kwargs.get("diagonal", 0)
        dims_ok = True
    elif n.target is aten.diag_embed.default:   # what torch.diag of a vector traces to
        args = list(n.args[1:]) + [None] * 3
        offset = args[0] if args[0] is not None else n.kwargs.get("offset", 0)
        d1 = args[1] if args[1] is not None else n.kwargs.get("dim1", -2)
        d2 = args[2] if args[2] is not None else n.kwargs.get("dim2", -1)
        dims_ok = {d1 % 2, d2 % 2} == {0, 1}
    else:
        return None
    a = n.args[0]
    v = val(a)
    if offset != 0 or not dims_ok or v is None or v.dim() != 1:
        return None
    return a


def run(gm: fx.GraphModule) -> int:
    count = 0
    g = gm.graph
    for n in list(g.nodes):
        if n.op != "call_function" or n.target is not aten.mm.default:
            continue
        left, right = n.args[:2]
        out = val(n)
        a = _diag_vector(left)
        if a is not None and val(a).dtype == out.dtype:
            with g.inserting_before(n):
                col = g.call_function(aten.unsqueeze.default, (a, 1))
                new = g.call_function(aten.mul.Tensor, (col, right))
        else:
            a = _diag_vector(right)
            if a is None or val(a).dtype != out.dtype:
                continue
            with g.inserting_before(n):
                new = g.call_function(aten.mul.Tensor, (left, a))
        n.replace_all_uses_with(new)
        g.erase_node(n)
        count += 1
    return count
