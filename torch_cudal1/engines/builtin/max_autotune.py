"""Inductor's max-autotune as a built-in candidate: its Triton templates for matrix products and
convolutions (epilogues such as bias and activations fused into them) and their tile sizes are
benchmarked on the device the search runs on, against cuBLAS / cuDNN, and the fastest is kept;
reductions (row-wise sums, softmax, norms) get their block sizes tuned on the device by
coordinate descent.

Where that beats inductor's default (library kernel plus separate epilogue, block sizes from
heuristics) is a matter of shapes and device, so it is one more candidate timed like the others,
not a rule. It only pays where a graph has such ops; its compile (tuning included) takes seconds
to a minute or more.
"""
from __future__ import annotations

import torch

from .switched import auto_on_gpu, op_name

# ATen ops that max-autotune has templates for (after decomposition: linear -> addmm / mm,
# matmul -> mm / bmm), and reductions whose block sizes it tunes
_TEMPLATED = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution", "convolution_backward",
              "_scaled_mm", "addmm_activation"}
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "var_mean", "std",
               "logsumexp", "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
               "_native_batch_norm_legit_no_training", "linalg_vector_norm", "norm", "cumsum",
               "argmax", "argmin"}
_TUNED = _TEMPLATED | _REDUCTIONS
# Tuning one shape: about 13 s on a quiet H200 host (ResNet-18's twelve shapes took 155 s), more
# beside other searches. On KernelBench's H200 records every graph with up to 12
# shapes verified in time; all five with 18 to 103 ran past the 300 s verification limit
# (benchmarks/autotune_cost.py).
SECONDS_PER_SHAPE = 20.0
_CONVOLUTIONS = {"convolution", "_convolution"}   # args: x, w, bias, stride, padding, dilation, transposed


def tuned_shapes(gm: torch.fx.GraphModule) -> int:
    """How many distinct matrix products and convolutions (op, argument shapes and dtypes) the
    graph has that max-autotune benchmarks its templates for: each is tuned once per process, and
    each costs seconds to tens of seconds (its Triton choices compiled and timed)."""
    seen = set()
    for node in gm.graph.nodes:
        name = op_name(node)
        if name not in _TEMPLATED:
            continue
        if name in _CONVOLUTIONS and (node.args[6] or any(d != 1 for d in node.args[5])):
            continue   # transposed or dilated: inductor has no template for them, cuDNN runs it
        seen.add((name, tuple(_signature(a) for a in node.args)))
    return len(seen)


def _signature(arg):
    val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    if isinstance(val, torch.Tensor):
        return tuple(val.shape), str(val.dtype)
    return repr(arg)


def has_tunable_ops(gm: torch.fx.GraphModule) -> bool:
    """True when the graph calls a matrix product, a convolution or a reduction."""
    return any(op_name(node) in _TUNED for node in gm.graph.nodes)


def enabled(setting: str, device: str, tunable: bool) -> bool:
    """``auto``: on a GPU, for graphs with such ops (on a CPU its C++ GEMM templates were not
    measured)."""
    return auto_on_gpu(setting, device, tunable)


def over_budget(setting: str, shapes: int, timeout_s: float) -> bool:
    """``auto`` leaves max-autotune out where tuning ``shapes`` would not fit in one verification's
    ``timeout_s``: the attempt would only time out, its minutes of compiling lost (``on`` still
    tries)."""
    return setting == "auto" and shapes * SECONDS_PER_SHAPE > timeout_s
