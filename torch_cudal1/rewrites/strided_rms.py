"""RMS normalisations over a strided dimension as the Triton template
(``templates/channel_norm.py``).

Not less arithmetic: another kernel for the same work (a ``KERNEL_CHOICE`` pass, so the engine
proposes the graph with and without it). It fires on a GPU graph's
``x / sqrt(mean(x*x, [d], keepdim) + eps)`` (or ``x * rsqrt(...)``; the square as ``pow(x, 2)``
or ``x * x``) where ``d`` is not the innermost dimension of a contiguous ``x`` and the
intermediate values have no other use. Generated code reads ``x`` twice there (KernelBench L1_36,
an RMS norm over 64 channels of 256x256 maps: inductor at 55% of the copy roofline on an H200).
"""
from __future__ import annotations

import math

import torch
import torch.fx as fx

from ._util import aten, normalize_dims, val

MIN_INNER = 128          # contiguous positions behind the reduced dim (a strip per program)
MIN_NUMEL = 1 << 20      # smaller maps are launch-bound: nothing to win
DEVICES = ("cuda",)      # where the template runs (tests add "cpu" under Triton's interpreter)
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _only_use(n, target_set) -> bool:
    return (isinstance(n, fx.Node) and n.op == "call_function" and n.target in target_set
            and len(n.users) == 1)


def _square_of(sq: fx.Node):
    """``x`` where ``sq`` is ``x**2`` or ``x*x``, else None."""
    if sq.target is aten.pow.Tensor_Scalar and sq.args[1] == 2:
        return sq.args[0]
    if sq.target is aten.mul.Tensor and sq.args[0] is sq.args[1]:
        return sq.args[0]
    return None


def _match(n: fx.Node):
    """((x, dim, eps), the chain's nodes from ``n`` up) where ``n`` is the normalised output,
    else None."""
    if n.target is aten.div.Tensor:
        x, r = n.args[0], n.args[1]
        if not _only_use(r, {aten.sqrt.default}):
            return None
    elif n.target is aten.mul.Tensor:
        x, r = n.args[0], n.args[1]
        if not _only_use(r, {aten.rsqrt.default}):
            x, r = r, x
            if not _only_use(r, {aten.rsqrt.default}):
                return None
    else:
        return None
    add = r.args[0]
    if not _only_use(add, {aten.add.Tensor, aten.add.Scalar}) or add.kwargs.get("alpha", 1) != 1:
        return None
    mean, eps = add.args[0], add.args[1]
    if not isinstance(eps, (int, float)) or not _only_use(mean, {aten.mean.dim}):
        return None
    if len(mean.args) < 3 or mean.args[2] is not True or mean.kwargs.get("dtype") is not None:
        return None
    sq = mean.args[0]
    if not _only_use(sq, {aten.pow.Tensor_Scalar, aten.mul.Tensor}) or _square_of(sq) is not x:
        return None
    v = val(x)
    if (not isinstance(v, torch.Tensor) or v.device.type not in DEVICES or v.dtype not in _DTYPES
            or not v.is_contiguous() or v.numel() < MIN_NUMEL):
        return None
    dims = normalize_dims(mean.args[1], v.dim())
    if len(dims) != 1 or math.prod(v.shape[dims[0] + 1:]) < MIN_INNER:
        return None
    out = val(n)
    if not isinstance(out, torch.Tensor) or out.shape != v.shape or out.dtype != v.dtype:
        return None
    return (x, dims[0], float(eps)), [n, r, add, mean, sq]


def run(gm: fx.GraphModule) -> int:
    from ..templates import channel_norm  # noqa: F401 - the op (and its fake) is registered
    g = gm.graph
    count = 0
    for n in list(g.nodes):
        if n.op != "call_function":
            continue
        m = _match(n)
        if m is None:
            continue
        args, chain = m
        with g.inserting_before(n):
            new = g.call_function(torch.ops.cudal1.strided_rms_norm.default, args)
        new.meta = dict(n.meta)
        n.replace_all_uses_with(new)
        for old in chain:     # each had this chain as its only use
            g.erase_node(old)
        count += 1
    return count
