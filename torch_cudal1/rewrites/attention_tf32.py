"""float32 fused attention as the flash-attention template (``templates/attention_tf32.py``).

``run``: the TF32 kernel. Not less arithmetic, and not exact: its products round their inputs to
TF32, so the built-in engine offers the graph with it only where it may propose TF32 (a
``TF32_ONLY`` pass), and always beside the graph without it (a ``KERNEL_CHOICE`` pass).
``run_3xtf32``: the same kernel with each product as three TF32 products, float32's precision:
offered at every precision setting (a ``KERNEL_CHOICE`` pass), where the TF32 kernel did not
take the attention first.
Fires on a GPU graph's float32 attention without dropout whose shapes and mask the template
takes: ``scaled_dot_product_attention`` as the ``fused_attention`` rewrite writes it, and the
backend op a user's own call (or ``nn.MultiheadAttention`` without weights) traces to — float32
on a GPU, the memory-efficient kernel's — where only its output, not its log-sum-exp, is used.
"""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ._util import aten, val

DEVICES = ("cuda",)      # where the template runs (tests add "cpu" under Triton's interpreter)
# the ops: one output, or a tuple whose first item is the output (the rest: softmax statistics
# and RNG state for training)
_OPS = (aten.scaled_dot_product_attention.default,
        aten._scaled_dot_product_efficient_attention.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default)   # a CPU trace's (tests)


def _arguments(n: fx.Node) -> dict:
    """The node's arguments by their schema names, the mask under ``attn_mask``."""
    names = [a.name for a in n.target._schema.arguments]
    kw = dict(zip(names, n.args), **n.kwargs)
    if "attn_bias" in kw:
        kw["attn_mask"] = kw.pop("attn_bias")
    return kw


def _output_only(n: fx.Node) -> bool:
    """A tuple-returning op whose users read the output alone."""
    return all(u.op == "call_function" and u.target is operator.getitem
               and (u.args[1] == 0 or not u.users) for u in n.users)


def run(gm: fx.GraphModule) -> int:
    return _replace(gm, "attention_tf32")


def run_3xtf32(gm: fx.GraphModule) -> int:
    return _replace(gm, "attention_3xtf32")


def _replace(gm: fx.GraphModule, op_name: str) -> int:
    from ..templates import attention_tf32 as template   # registers the ops
    op = getattr(torch.ops.cudal1, op_name).default
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in _OPS:
            continue
        kw = _arguments(n)
        q, k, v = (val(kw.get(name)) for name in ("query", "key", "value"))
        mask = kw.get("attn_mask")
        if kw.get("dropout_p") or kw.get("enable_gqa") \
                or not all(isinstance(t, torch.Tensor) for t in (q, k, v)) \
                or (mask is not None and not isinstance(val(mask), torch.Tensor)):
            continue
        single = n.target is aten.scaled_dot_product_attention.default
        if q.device.type not in DEVICES or not template.takes(q, k, v, val(mask)) \
                or not (single or _output_only(n)):
            continue
        out = val(n) if single else val(n)[0]
        with gm.graph.inserting_before(n):   # in the replaced output's layout: views follow
            new = gm.graph.call_function(op, (kw["query"], kw["key"], kw["value"], mask,
                                              kw.get("scale"), bool(kw.get("is_causal")),
                                              template.layout_order(out)))
        new.meta = dict(n.meta, val=out)
        if not single:
            for u in list(n.users):
                if u.args[1] == 0:
                    u.replace_all_uses_with(new)
                gm.graph.erase_node(u)
        else:
            n.replace_all_uses_with(new)
        gm.graph.erase_node(n)
        count += 1
    return count
