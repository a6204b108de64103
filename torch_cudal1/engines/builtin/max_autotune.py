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

from .switched import op_name

# ATen ops that max-autotune has templates for (after decomposition: linear -> addmm / mm,
# matmul -> mm / bmm), and reductions whose block sizes it tunes
_TEMPLATED = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution", "convolution_backward",
              "_scaled_mm", "addmm_activation"}
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "var_mean", "std",
               "logsumexp", "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
               "_native_batch_norm_legit_no_training", "linalg_vector_norm", "norm", "cumsum",
               "argmax", "argmin"}
_TUNED = _TEMPLATED | _REDUCTIONS


def has_tunable_ops(gm: torch.fx.GraphModule) -> bool:
    """True when the graph calls a matrix product, a convolution or a reduction."""
    return any(op_name(node) in _TUNED for node in gm.graph.nodes)


def enabled(setting: str, device: str, tunable: bool) -> bool:
    """``auto``: on a GPU, for graphs with such ops (on a CPU its C++ GEMM templates were not
    measured)."""
    if setting == "auto":
        return str(device).startswith("cuda") and tunable
    return setting == "on"
