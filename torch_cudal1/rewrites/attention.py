"""Attention written out as products and a softmax becomes one fused attention call.

``softmax(q @ k^T * s [+ mask | masked_fill(-inf)], -1) @ v`` materialises an L x L score matrix
per head and reads it three times; ``scaled_dot_product_attention(q, k, v, mask, scale=s)``
computes the same values without it (flash / memory-efficient kernels on GPUs, a blocked kernel
on CPUs): O(L) memory instead of O(L^2), one pass. ``nn.MultiheadAttention`` (its averaged
weights unused) and minGPT-style causal attention trace to this. Exact up to the order of
floating-point sums (online softmax); the verifier compares the result with the float64
reference like any candidate's.

Matched: the two ``bmm`` of the pattern on 3-D operands that are row-major reshapes of tensors of
the softmax's rank (3-D or 4-D: the views, ``_unsafe_view`` and contiguity clones AOT autograd puts
around a 4-D matmul are looked through); one floating dtype; the scale a Python number
multiplying ``q`` or the scores (or dividing the scores); an optional mask that broadcasts to the
scores — additive and floating, or boolean through ``masked_fill(mask, -inf)``; a softmax over
the last dim whose result feeds only the second product.
"""
from __future__ import annotations

import numbers

import torch
import torch.fx as fx

from ._util import aten, replace_matches, val

_SOFTMAX = (aten._softmax.default, aten.softmax.int)


def _call(n, *targets) -> bool:
    return isinstance(n, fx.Node) and n.op == "call_function" and n.target in targets


def _scalar(x):
    return float(x) if isinstance(x, numbers.Real) and not isinstance(x, bool) else None


def _last_dim_softmax(n):
    """The softmax's input when ``n`` is a plain softmax over the last dim, else None."""
    if not _call(n, *_SOFTMAX):
        return None
    x, dim = n.args[0], n.args[1]
    v = val(x)
    if v is None or dim % v.dim() != v.dim() - 1:
        return None
    if n.target is aten._softmax.default and n.args[2]:   # half_to_float changes the dtype
        return None
    if n.target is aten.softmax.int and len(n.args) > 2 and n.args[2] is not None:
        return None
    return x


def _scaled(n):
    """(node, scale) peeling one multiplication or division by a number."""
    if _call(n, aten.mul.Tensor, aten.mul.Scalar):
        a, b = n.args[:2]
        if _scalar(b) is not None:
            return a, _scalar(b)
        if _scalar(a) is not None:
            return b, _scalar(a)
    if _call(n, aten.div.Tensor, aten.div.Scalar) and _scalar(n.args[1]):
        return n.args[0], 1.0 / _scalar(n.args[1])
    return n, 1.0


def _single_use(n) -> bool:
    return isinstance(n, fx.Node) and len(n.users) == 1


_RESHAPES = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)


def _as_rank(n, shape):
    """A node whose value, reshaped row-major, is ``n``'s and whose shape is ``shape`` (looking
    through reshapes and contiguity clones), or None."""
    while True:
        v = val(n)
        if isinstance(v, torch.Tensor) and tuple(v.shape) == tuple(shape):
            return n
        if _call(n, *_RESHAPES) or (_call(n, aten.clone.default) and not n.args[1:]
                                    and set(n.kwargs) <= {"memory_format"}):
            n = n.args[0]
            continue
        return None


def _lead(shape, last2):
    return tuple(shape[:-2]) + tuple(last2)


def _merged(shape) -> tuple:
    """``shape`` with its leading dims merged into one: what a 3-D ``bmm`` sees of it."""
    n = 1
    for d in shape[:-2]:
        n *= d
    return (n,) + tuple(shape[-2:])


def _match(out: fx.Node):
    """(q, k_t, v, mask, scale) in the softmax's rank for ``out = bmm(P, v)``, else None."""
    if not _call(out, aten.bmm.default):
        return None
    p3, v3 = out.args[:2]
    probs = p3
    while _call(probs, *_RESHAPES) and _single_use(probs):
        probs = probs.args[0]
    if not _single_use(probs):
        return None
    scores = _last_dim_softmax(probs)
    if scores is None or not _single_use(scores):
        return None
    shape = tuple(val(probs).shape)
    if len(shape) not in (3, 4) or tuple(val(p3).shape) != _merged(shape):
        return None
    mask = None
    if _call(scores, aten.add.Tensor) and len(scores.args) == 2 and not scores.kwargs:
        a, b = scores.args
        if not _single_use(a) or not isinstance(b, fx.Node):
            return None
        m = val(b)
        if not (isinstance(m, torch.Tensor) and m.is_floating_point() and m.dtype == val(a).dtype):
            return None
        scores, mask = a, b
    elif _call(scores, aten.masked_fill.Scalar) and scores.args[2] == float("-inf"):
        a, b = scores.args[:2]
        if not _single_use(a) or val(b) is None or val(b).dtype != torch.bool:
            return None
        scores, mask = a, ("not", b)   # SDPA's boolean mask marks what takes part
    if mask is not None:
        m = val(mask[1] if isinstance(mask, tuple) else mask)
        try:
            if torch.broadcast_shapes(m.shape, shape) != shape:
                return None
        except RuntimeError:
            return None
    scores, post = _scaled(scores)
    if not _single_use(scores):
        return None
    while _call(scores, *_RESHAPES) and _single_use(scores):
        scores = scores.args[0]
    if not _call(scores, aten.bmm.default) or tuple(val(scores).shape) != _merged(shape):
        return None
    q3, kt3 = scores.args[:2]
    q3, pre = _scaled(q3)
    vq, vkt, vv = val(q3), val(kt3), val(v3)
    if any(not isinstance(x, torch.Tensor) or x.dim() != 3 for x in (vq, vkt, vv, val(out))):
        return None
    q = _as_rank(q3, _lead(shape, vq.shape[-2:]))
    k_t = _as_rank(kt3, _lead(shape, vkt.shape[-2:]))
    v = _as_rank(v3, _lead(shape, vv.shape[-2:]))
    if q is None or k_t is None or v is None:
        return None
    if len({val(x).dtype for x in (q, k_t, v, out)}) != 1 or not vq.is_floating_point():
        return None
    return q, k_t, v, mask, pre * post


def _fused(g: fx.Graph, n: fx.Node, m) -> fx.Node:
    q, k_t, v, mask, scale = m
    rank = val(q).dim()
    if _call(k_t, aten.transpose.int) and {d % rank for d in k_t.args[1:3]} == {rank - 2, rank - 1}:
        k = k_t.args[0]
    else:
        k = g.call_function(aten.transpose.int, (k_t, -2, -1))
    if isinstance(mask, tuple):
        mask = g.call_function(aten.logical_not.default, (mask[1],))
    new = g.call_function(aten.scaled_dot_product_attention.default, (q, k, v),
                          {"attn_mask": mask, "dropout_p": 0.0, "is_causal": False,
                           "scale": scale})
    if rank != 3:
        new = g.call_function(aten.reshape.default, (new, list(val(n).shape)))
    return new


def run(gm: fx.GraphModule) -> int:
    return replace_matches(gm, _match, _fused)
