"""A sum over the columns of a matrix product is a product with the summed columns.

``(a @ b).sum(1) == a @ b.sum(1)``: an (M, K) by (K, 1) product instead of (M, K) by (K, N), the
N-fold work gone. Scalar multiplications and divisions between the product and the sum commute
with it, and ``addmm``'s bias is summed alongside. Exact in real arithmetic; in floating point
the sum is taken in another order, as any reduction's may be."""
from __future__ import annotations

import torch.fx as fx

from ._util import aten, is_float_tensor, normalize_dims, val

_SCALAR_OPS = {aten.mul.Tensor, aten.div.Tensor}


def _scalar(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _product_under(x):
    """(the mm/addmm node, the scalar ops from it up to ``x``) where ``x`` is such a chain, each
    link used only by the next."""
    chain = []
    while isinstance(x, fx.Node) and x.op == "call_function" and x.target in _SCALAR_OPS \
            and len(x.args) == 2 and _scalar(x.args[1]) and len(x.users) == 1:
        chain.append(x)
        x = x.args[0]
    if isinstance(x, fx.Node) and x.op == "call_function" and len(x.users) == 1 and (
            x.target is aten.mm.default
            or x.target is aten.addmm.default and not x.kwargs and len(x.args) == 3):
        return x, chain
    return None


def _bias_sum(g: fx.Graph, bias, n_cols: int):
    """``bias`` broadcast to (M, N) and summed over N, as a node broadcasting to (M, 1)."""
    v = val(bias)
    if v is None or v.dim() not in (1, 2) or v.shape[-1] not in (1, n_cols):
        return None
    summed = g.call_function(aten.sum.dim_IntList, (bias, [v.dim() - 1], True))
    if v.shape[-1] == 1 and n_cols > 1:   # one value broadcast along the row: N copies of it
        summed = g.call_function(aten.mul.Tensor, (summed, n_cols))
    return summed


def run(gm: fx.GraphModule) -> int:
    g = gm.graph
    count = 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target is not aten.sum.dim_IntList or n.kwargs:
            continue
        x = n.args[0]
        vx, out = val(x), val(n)
        if not (is_float_tensor(vx) and is_float_tensor(out)) or vx.dim() != 2 \
                or vx.dtype != out.dtype or len(n.args) < 2 \
                or normalize_dims(n.args[1], 2) != [1]:
            continue
        found = _product_under(x)
        if found is None:
            continue
        prod, chain = found
        if prod.target is aten.addmm.default:
            bias, a, b = prod.args
        else:
            (a, b), bias = prod.args, None
        keep = n.args[2] if len(n.args) > 2 else False
        with g.inserting_before(n):
            extra = _bias_sum(g, bias, vx.shape[1]) if bias is not None else None
            if bias is not None and extra is None:
                continue
            y = g.call_function(aten.mm.default, (a, g.call_function(aten.sum.dim_IntList,
                                                                     (b, [1], True))))
            if extra is not None:
                y = g.call_function(aten.add.Tensor, (y, extra))
            for link in reversed(chain):
                y = g.call_function(link.target, (y, link.args[1]))
            if not keep:
                y = g.call_function(aten.squeeze.dims, (y, [1]))
        n.replace_all_uses_with(y)
        g.erase_node(n)
        count += 1
    return count
