"""Exact mathematical rewrites of functional ATen graphs that remove work.

Each rewrite is a small module with ``run(gm) -> changes``; ``apply_rewrites`` runs them to a
fixed point, re-propagating fake values between passes and removing dead code after each, and
reports which ones fired. A rewrite that only re-describes memory (views) does not count as
firing: the built-in engine proposes a rewritten graph only when real work was removed.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch.fx as fx

from . import (attention, attention_tf32, avg_pool, cleanup, conv_transpose, cse, diag, long_rows,
               matrix_chain, outputs, size_one, sum_of_product, value_range)
from ._util import dead_code

# (name, pass, counts as removing work)
PASSES = [
    ("noop_dropout", cleanup.noop_dropout, True),
    ("identity_views", cleanup.identity_views, False),
    ("needless_copies", cleanup.needless_copies, True),
    ("cse", cse.run, True),
    ("diag_broadcast", diag.run, True),
    ("matrix_chain", matrix_chain.run, True),
    ("sum_of_product", sum_of_product.run, True),
    ("fused_attention", attention.run, True),
    # nor this, nor exact: float32 attention as a flash-attention template in TF32 (GPU graphs)
    ("attention_tf32", attention_tf32.run, True),
    # not less work (strided: no products with inserted zeros), but the forward kernels
    ("transposed_conv_as_conv", conv_transpose.run, True),
    # nor this: an average pool as a depthwise convolution with a constant kernel
    ("avg_pool_as_conv", avg_pool.run, True),
    ("value_range", value_range.run, True),
    ("size_one_reduction", size_one.run, True),
    # not less work either: a Triton template for layer and group norms over long rows (GPU graphs)
    ("long_row_layer_norm", long_rows.run, True),
    ("long_row_group_norm", long_rows.run_group, True),
]
NAMES = [p[0] for p in PASSES]
# Passes that move work to other kernels rather than remove it: whether that is faster depends on
# the device and the shapes, so the built-in engine proposes the graph both with and without them.
KERNEL_CHOICE = {"transposed_conv_as_conv", "avg_pool_as_conv", "long_row_layer_norm",
                 "long_row_group_norm", "attention_tf32"}
# Passes whose kernels round float32 products to TF32: proposed only where the engine may propose
# TF32 (option ``tf32``), in the rewritten graph through inductor with and without TF32 for the
# module's other products.
TF32_ONLY = {"attention_tf32"}


@dataclass
class RewriteResult:
    gm: fx.GraphModule
    counts: dict = field(default_factory=dict)     # name -> changes made (dead_code included)

    @property
    def fired(self) -> list[str]:
        """Rewrites that removed real work."""
        significant = {name for name, _, sig in PASSES if sig} | {"dead_code"}
        return [k for k, v in self.counts.items() if v and k in significant]


def _refresh(gm: fx.GraphModule) -> None:
    from ..graph.trace import propagate_meta
    gm.graph.lint()
    gm.recompile()
    propagate_meta(gm)


def apply_rewrites(gm: fx.GraphModule, only: list[str] | None = None,
                   max_rounds: int = 4) -> RewriteResult:
    """Rewrite a copy of ``gm`` (whose nodes carry fake ``meta['val']``)."""
    gm = copy.deepcopy(gm)
    before = outputs.layouts(gm)
    counts: dict = {}
    passes = [p for p in PASSES if only is None or p[0] in only]
    # Dead code present in the trace itself (unused results of the user's code) is work too.
    counts["dead_code"] = dead_code(gm)
    _refresh(gm)
    for _ in range(max_rounds):
        changed = False
        for name, fn, _sig in passes:
            n = fn(gm)
            if n:
                counts[name] = counts.get(name, 0) + n
                counts["dead_code"] += dead_code(gm)
                _refresh(gm)
                changed = True
        if not changed:
            break
    outputs.protect(gm, before)
    dead_code(gm)
    _refresh(gm)
    return RewriteResult(gm, counts)


__all__ = ["apply_rewrites", "RewriteResult", "PASSES", "NAMES", "KERNEL_CHOICE", "TF32_ONLY"]
