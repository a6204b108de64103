"""float32 fused attention as the TF32 flash-attention template (``templates/attention_tf32.py``).

Not less arithmetic, and not exact: the template's products round their inputs to TF32, so the
built-in engine offers the graph with it only in its TF32 candidates (a ``TF32_ONLY`` pass), where
the op runs the template, and always beside the graph without it (a ``KERNEL_CHOICE`` pass).
Fires on a GPU graph's float32 ``scaled_dot_product_attention`` (as the ``fused_attention``
rewrite writes it, or the user did) without dropout, whose shapes and mask the template takes.
"""
from __future__ import annotations

import torch
import torch.fx as fx

from ._util import aten, val

DEVICES = ("cuda",)      # where the template runs (tests add "cpu" under Triton's interpreter)
_KWARGS = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _arguments(n: fx.Node) -> dict | None:
    """The node's optional arguments by name, or None where the template does not apply."""
    kw = dict(zip(_KWARGS, n.args[3:]), **n.kwargs)
    if kw.get("dropout_p", 0.0) or kw.get("enable_gqa"):
        return None
    return kw


def run(gm: fx.GraphModule) -> int:
    from ..templates import attention_tf32 as template
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target is not aten.scaled_dot_product_attention.default:
            continue
        kw = _arguments(n)
        q, k, v = (val(a) for a in n.args[:3])
        if kw is None or not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
            continue
        mask = kw.get("attn_mask")
        if mask is not None and not isinstance(val(mask), torch.Tensor):
            continue
        if q.device.type not in DEVICES or not template.takes(q, k, v, val(mask)):
            continue
        with gm.graph.inserting_before(n):
            new = gm.graph.call_function(torch.ops.cudal1.attention_tf32.default,
                                         (*n.args[:3], mask, kw.get("scale"),
                                          bool(kw.get("is_causal"))))
        new.meta = dict(n.meta)
        n.replace_all_uses_with(new)
        gm.graph.erase_node(n)
        count += 1
    return count
