"""Reductions over dimensions of size 1 do no arithmetic.

``sum``/``mean``/``amax``/``amin``/``logsumexp`` over size-1 dims are a view (``squeeze``, or the input itself
with ``keepdim``); ``max``/``min`` with ``dim`` give that view and zero indices; ``argmax``/``argmin``
are zeros; ``softmax`` over a size-1 dim is ones and ``log_softmax`` zeros (exact for finite
inputs)."""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ._util import aten, full_like_node, is_float_tensor, normalize_dims, val

# logsumexp of one value is that value: max + log(exp(0)), and exp(0) and log(1) are exact
_REDUCTIONS = {aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default,
               aten.logsumexp.default}


def _all_size_one(x, dims) -> list | None:
    v = val(x)
    if v is None:
        return None
    if v.dim() == 0:
        return []
    ds = normalize_dims(dims, v.dim())
    return ds if all(v.shape[d] == 1 for d in ds) else None


def _squeezed(g: fx.Graph, x, dims, keepdim: bool):
    if keepdim or not dims:
        return x
    return g.call_function(aten.squeeze.dims, (x, dims))


def run(gm: fx.GraphModule) -> int:
    g = gm.graph
    count = 0
    for n in list(g.nodes):
        if n.op != "call_function":
            continue
        t, a, kw = n.target, n.args, n.kwargs
        out = val(n)
        if t in _REDUCTIONS:
            x = a[0]
            if not (is_float_tensor(val(x)) and is_float_tensor(out)) or val(x).dtype != out.dtype:
                continue
            dims = a[1] if len(a) > 1 else kw.get("dim")
            keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
            ds = _all_size_one(x, dims)
            if ds is None:
                continue
            with g.inserting_before(n):
                new = _squeezed(g, x, ds, keep)
        elif t in (aten.max.dim, aten.min.dim):
            x, dim = a[0], a[1]
            keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
            ds = _all_size_one(x, [dim])
            if ds is None or not all(u.target is operator.getitem for u in n.users):
                continue
            with g.inserting_before(n):
                values = _squeezed(g, x, ds, keep)
                idx = full_like_node(g, out[1], 0)
            for u in list(n.users):
                u.replace_all_uses_with(values if u.args[1] == 0 else idx)
                g.erase_node(u)
            g.erase_node(n)
            count += 1
            continue
        elif t in (aten.argmax.default, aten.argmin.default):
            dim = a[1] if len(a) > 1 else kw.get("dim")
            if dim is None or _all_size_one(a[0], [dim]) is None:
                continue
            with g.inserting_before(n):
                new = full_like_node(g, out, 0)
        elif t in (aten._softmax.default, aten._log_softmax.default):
            if not is_float_tensor(out) or _all_size_one(a[0], [a[1]]) is None:
                continue
            with g.inserting_before(n):
                new = full_like_node(g, out, 1.0 if t is aten._softmax.default else 0.0)
        else:
            continue
        n.replace_all_uses_with(new)
        g.erase_node(n)
        count += 1
    return count
