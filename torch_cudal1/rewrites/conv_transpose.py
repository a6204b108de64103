"""A transposed convolution as plain convolutions with the kernel flipped.

Stride 1: ``conv_transpose(x, w, padding=p, dilation=d)`` equals
``conv(x, w', padding=d*(k-1)-p, dilation=d)``, where ``w'`` swaps the kernel's input and output
channels (within each group) and flips it along every spatial axis: output position ``o`` takes
input ``o + p - d*j`` with tap ``j`` either way.

Stride s > 1 (dilation 1, kernel at least s): output ``o`` takes input ``i`` through tap ``j``
where ``o + p = i*s + j``, so the outputs with ``(o + p) mod s == r`` see only the taps
``j = r, r+s, r+2s, ...``. Each such phase is a stride-1 transposed convolution of the input with
that sub-kernel — a plain convolution as above — and the phases interleave into the output
(``s**dims`` convolutions for one; their taps together are the kernel's, so no product with an
inserted zero is computed). The bias is added once, after.

The same multiply-adds either way, done by the forward convolution kernels, which libraries tune
far more than the transposed (gradient-of-input) path: CUDA-L1's solutions of KernelBench's
stride-1 transposed convolutions do the first and run 3-6x faster than eager on an H200
(``benchmarks/results/kernelbench/h200/solutions.md``). Like every rewrite it is only a
candidate: the verifier checks it and the timing decides.

Not rewritten: symbolic sizes; stride 1 with an output padding or a padding wider than the
dilated kernel; strides above 1 with a dilation, or a kernel shorter than the stride.
"""
from __future__ import annotations

import itertools

import torch.fx as fx

from ._util import aten, per_dim, replace_matches, val


def _plan(n: fx.Node):
    """The convolution's parameters as plain ints when ``n`` is a transposed convolution this
    rewrite handles, else None."""
    if n.op != "call_function" or n.target is not aten.convolution.default or len(n.args) < 9:
        return None
    x, w, _bias, stride, padding, dilation, transposed, output_padding, groups = n.args[:9]
    wv, xv = val(w), val(x)
    if not transposed or wv is None or xv is None or not isinstance(groups, int):
        return None
    nd = wv.dim() - 2
    try:
        shape, length = [int(s) for s in wv.shape], [int(s) for s in xv.shape[2:]]
        stride, padding, dilation, output_padding = (
            per_dim(vs, nd) for vs in (stride, padding, dilation, output_padding))
    except (TypeError, ValueError):   # symbolic sizes: leave it
        return None
    kernel = shape[2:]
    if len(stride) != nd or len(length) != nd or shape[0] % groups:
        return None
    plan = {"c_in": shape[0], "c_out_g": shape[1], "kernel": kernel, "groups": groups,
            "stride": stride, "padding": padding, "dilation": dilation, "length": length,
            "output_padding": output_padding}
    if all(s == 1 for s in stride):
        new_padding = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
        if any(output_padding) or min(new_padding) < 0:
            return None
        return dict(plan, new_padding=new_padding)
    if any(d != 1 for d in dilation) or any(k < s for k, s in zip(kernel, stride)):
        return None
    return plan


def _flipped_weight(g: fx.Graph, w: fx.Node, plan: dict, taps: list) -> fx.Node:
    """``w`` (C_in, C_out/g, k...) as a forward kernel (C_out, C_in/g, t...): channels swapped
    within groups, the taps ``taps[d]`` (a slice per spatial dim) kept, flipped."""
    groups, c_in, c_out_g, kernel = plan["groups"], plan["c_in"], plan["c_out_g"], plan["kernel"]
    nd = len(kernel)
    h = g.call_function(aten.view.default, (w, [groups, c_in // groups, c_out_g, *kernel]))
    h = g.call_function(aten.transpose.int, (h, 1, 2))
    sizes = []
    for d, (start, step) in enumerate(taps):
        if (start, step) != (0, 1):
            h = g.call_function(aten.slice.Tensor, (h, 3 + d, start, kernel[d], step))
        sizes.append(len(range(start, kernel[d], step)))
    h = g.call_function(aten.flip.default, (h, list(range(3, 3 + nd))))
    # flip keeps the transposed strides: reshape copies where a view cannot
    return g.call_function(aten.reshape.default, (h, [groups * c_out_g, c_in // groups, *sizes]))


def _stride_one(g: fx.Graph, n: fx.Node, plan: dict) -> fx.Node:
    x, w, bias = n.args[:3]
    nd = len(plan["kernel"])
    weight = _flipped_weight(g, w, plan, [(0, 1)] * nd)
    return g.call_function(aten.convolution.default,
                           (x, weight, bias, [1] * nd, plan["new_padding"], plan["dilation"],
                            False, [0] * nd, plan["groups"]))


def _phases(g: fx.Graph, n: fx.Node, plan: dict) -> fx.Node:
    x, w, bias = n.args[:3]
    kernel, stride, padding = plan["kernel"], plan["stride"], plan["padding"]
    nd = len(kernel)
    out_len = [(L - 1) * s - 2 * p + k + op for L, s, p, k, op in
               zip(plan["length"], stride, padding, kernel, plan["output_padding"])]
    per_phase = [-(-o // s) for o, s in zip(out_len, stride)]   # outputs of one phase, rounded up
    parts = []
    for q in itertools.product(*(range(s) for s in stride)):   # the output's residue per dim
        r = [(qi + p) % s for qi, p, s in zip(q, padding, stride)]
        first = [(qi + p) // s for qi, p, s in zip(q, padding, stride)]
        taps = [len(range(ri, k, s)) for ri, k, s in zip(r, kernel, stride)]
        weight = _flipped_weight(g, w, plan, list(zip(r, stride)))
        z = g.call_function(aten.convolution.default,
                            (x, weight, None, [1] * nd, [t - 1 for t in taps], [1] * nd, False,
                             [0] * nd, plan["groups"]))
        # this phase's outputs are z[first : first + per_phase] per dim (zeros beyond z)
        pads = []
        for d in reversed(range(nd)):
            z_len = plan["length"][d] + taps[d] - 1
            pads += [-first[d], first[d] + per_phase[d] - z_len]
        if any(pads):
            z = g.call_function(aten.constant_pad_nd.default, (z, pads, 0.0))
        parts.append(z)
    # interleave: (N, C, U1..Und, s1..snd) -> (N, C, U1, s1, ..., Und, snd) -> (N, C, O1.., Ond)
    h = g.call_function(aten.stack.default, (parts, -1))
    n_b, c_out = (int(v) for v in val(n).shape[:2])
    h = g.call_function(aten.view.default, (h, [n_b, c_out, *per_phase, *stride]))
    h = g.call_function(aten.permute.default, (h, [0, 1] + [i for d in range(nd)
                                                            for i in (2 + d, 2 + nd + d)]))
    h = g.call_function(aten.reshape.default,
                        (h, [n_b, c_out, *[u * s for u, s in zip(per_phase, stride)]]))
    for d, o in enumerate(out_len):
        if o != per_phase[d] * stride[d]:
            h = g.call_function(aten.slice.Tensor, (h, 2 + d, 0, o))
    if bias is not None:
        h = g.call_function(aten.add.Tensor,
                            (h, g.call_function(aten.view.default, (bias, [1, c_out] + [1] * nd))))
    return h


def run(gm: fx.GraphModule) -> int:
    return replace_matches(gm, _plan, lambda g, n, plan: (
        _stride_one(g, n, plan) if "new_padding" in plan else _phases(g, n, plan)))
