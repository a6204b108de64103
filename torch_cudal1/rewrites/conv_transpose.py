"""A transposed convolution with stride 1 is a plain convolution with the kernel flipped.

``conv_transpose(x, w, padding=p, dilation=d)`` with stride 1 equals
``conv(x, w', padding=d*(k-1)-p, dilation=d)``, where ``w'`` swaps the kernel's input and output
channels (within each group) and flips it along every spatial axis: output position ``o`` takes
input ``o + p - d*j`` with tap ``j`` either way. The same multiply-adds, done by the forward
convolution kernels, which libraries tune far more than the transposed (gradient-of-input) path:
CUDA-L1's solutions of KernelBench's stride-1 transposed convolutions do this and run 3-6x faster
than eager on an H200 (``benchmarks/results/h200/kernelbench/solutions.md``). Like every rewrite
it is only a candidate: the verifier checks it and the timing decides.

Not rewritten: strides above 1 (the input would need zeros inserted between its elements), an
output padding, or a padding wider than the dilated kernel (the equivalent padding is negative).
"""
from __future__ import annotations

import torch.fx as fx

from ._util import aten, val


def _plan(n: fx.Node):
    """(weight shape, groups, dilation, new padding) when ``n`` is a stride-1 transposed
    convolution."""
    if n.op != "call_function" or n.target is not aten.convolution.default or len(n.args) < 9:
        return None
    x, w, _bias, stride, padding, dilation, transposed, output_padding, groups = n.args[:9]
    wv = val(w)
    if not transposed or wv is None or val(x) is None or not isinstance(groups, int):
        return None
    nd = wv.dim() - 2
    try:
        shape = [int(s) for s in wv.shape]
        stride, padding, dilation, output_padding = (
            [int(v) for v in vs] * (nd if len(vs) == 1 else 1)
            for vs in (stride, padding, dilation, output_padding))
    except (TypeError, ValueError):   # symbolic sizes: leave it
        return None
    if any(s != 1 for s in stride) or any(output_padding):
        return None
    new_padding = [d * (k - 1) - p for d, k, p in zip(dilation, shape[2:], padding)]
    if len(new_padding) != nd or min(new_padding) < 0 or shape[0] % groups:
        return None
    return shape, groups, dilation, new_padding


def run(gm: fx.GraphModule) -> int:
    count = 0
    g = gm.graph
    for n in list(g.nodes):
        plan = _plan(n)
        if plan is None:
            continue
        (c_in, c_out_g, *kernel), groups, dilation, new_padding = plan
        x, w, bias = n.args[:3]
        nd = len(kernel)
        with g.inserting_before(n):
            # (C_in, C_out/g, k...) -> (g, C_out/g, C_in/g, k...) flipped -> (C_out, C_in/g, k...)
            grouped = g.call_function(aten.view.default, (w, [groups, c_in // groups, c_out_g, *kernel]))
            swapped = g.call_function(aten.transpose.int, (grouped, 1, 2))
            flipped = g.call_function(aten.flip.default, (swapped, list(range(3, 3 + nd))))
            # flip keeps the transposed strides: reshape copies where a view cannot
            weight = g.call_function(aten.reshape.default,
                                     (flipped, [groups * c_out_g, c_in // groups, *kernel]))
            new = g.call_function(aten.convolution.default,
                                  (x, weight, bias, [1] * nd, new_padding, dilation, False,
                                   [0] * nd, groups))
        n.replace_all_uses_with(new)
        g.erase_node(n)
        count += 1
    return count
