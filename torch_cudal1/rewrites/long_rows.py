"""Layer and group norms over long rows as the split-row Triton template
(``templates/long_row_norm.py``).

Not less arithmetic: another kernel for the same work (a ``KERNEL_CHOICE`` pass, so the engine
proposes the graph with and without it). It fires on a GPU graph's ``native_layer_norm`` whose
normalized part holds at least ``MIN_ROW`` elements in fewer rows than the device has SMs, and
whose mean and rstd outputs are unused (inference): there one program per row, or a looped
reduction per row, leaves the device idle (KernelBench L1_40: 16 rows of 4M elements, inductor at
27% of the copy roofline on an H200). Likewise for ``native_group_norm`` whose groups (channels
per group times spatial size) are that long. With rows enough to fill the device, inductor's own
kernels were as fast or faster in every case measured (0.53x to 1.03x,
``benchmarks/templates_bench.py``), so the template is not proposed there.
"""
from __future__ import annotations

import math
import operator

import torch
import torch.fx as fx

from ._util import aten, val

MIN_ROW = 1 << 16
DEVICES = ("cuda",)      # where the template runs (tests add "cpu" under Triton's interpreter)
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _sms(device: torch.device) -> int:
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 132   # an H100 / H200 (graphs traced off the GPU, in tests)


def _applies(n: fx.Node, row: int, affine: int) -> bool:
    """A norm node on a template device and dtype, fewer rows than SMs, of ``row`` elements each,
    affine parameters of ``affine`` elements (or none), and only its normalised output used."""
    v = val(n.args[0])
    if not isinstance(v, torch.Tensor) or v.device.type not in DEVICES or v.dtype not in _DTYPES:
        return False
    if row < MIN_ROW or v.numel() % row or v.numel() // row >= _sms(v.device):
        return False
    for p in n.args[1:3] if n.target is aten.native_group_norm.default else n.args[2:4]:
        pv = val(p) if isinstance(p, fx.Node) else p
        if pv is not None and (not isinstance(pv, torch.Tensor) or pv.numel() != affine):
            return False
    return all(u.target is operator.getitem and (u.args[1] == 0 or not u.users) for u in n.users)


def _replace(g: fx.Graph, n: fx.Node, op, args: tuple) -> None:
    with g.inserting_before(n):
        new = g.call_function(op, args)
    new.meta = dict(n.meta)
    new.meta["val"] = val(n)[0] if isinstance(val(n), (tuple, list)) else None
    for u in list(n.users):
        if u.args[1] == 0:
            u.replace_all_uses_with(new)
        g.erase_node(u)
    g.erase_node(n)


def _rewrite_each(gm: fx.GraphModule, target, build) -> int:
    """Replace every ``target`` node for which ``build(node)`` gives ``(op, args)``."""
    from ..templates import long_row_norm  # noqa: F401 - the ops (and their fakes) are registered
    count = 0
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target is target:
            made = build(n)
            if made is not None:
                _replace(gm.graph, n, *made)
                count += 1
    return count


def _layer_norm(n: fx.Node):
    row = math.prod(int(d) for d in n.args[1])
    if not _applies(n, row, row):
        return None
    x, _, w, b, eps = (list(n.args) + [None] * 5)[:5]
    return torch.ops.cudal1.long_row_layer_norm.default, (x, w, b, row, float(eps))


def _group_norm(n: fx.Node):
    x, w, b, _, c, hw, groups, eps = n.args
    if not all(isinstance(a, int) for a in (c, hw, groups)) or not groups or c % groups:
        return None
    if not _applies(n, c // groups * hw, c):
        return None
    return torch.ops.cudal1.long_row_group_norm.default, (x, w, b, groups, float(eps))


def run(gm: fx.GraphModule) -> int:
    return _rewrite_each(gm, aten.native_layer_norm.default, _layer_norm)


def run_group(gm: fx.GraphModule) -> int:
    return _rewrite_each(gm, aten.native_group_norm.default, _group_norm)
