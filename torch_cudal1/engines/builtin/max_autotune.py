"""Inductor's max-autotune as a built-in candidate: its Triton templates for matrix products and
convolutions (epilogues such as bias and activations fused into them) and their tile sizes are
benchmarked on the device the search runs on, against cuBLAS / cuDNN, and the fastest is kept.

Where that beats inductor's default (library kernel plus separate epilogue) is a matter of shapes
and device, so it is one more candidate timed like the others, not a rule. It only pays where a
graph has such products; its compile (autotuning included) takes seconds to a minute or more.
"""
from __future__ import annotations

import torch

# ATen ops that max-autotune has templates for (after decomposition: linear -> addmm / mm,
# matmul -> mm / bmm)
_HEAVY = {"mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution", "convolution_backward",
          "_scaled_mm", "addmm_activation"}


def has_templated_ops(gm: torch.fx.GraphModule) -> bool:
    """True when the graph calls a matrix product or a convolution."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        packet = getattr(node.target, "overloadpacket", None)
        name = getattr(packet, "__name__", "") if packet is not None else ""
        if name in _HEAVY:
            return True
    return False


def enabled(setting: str, device: str, templated: bool) -> bool:
    """``auto``: on a GPU, for graphs with matrix products or convolutions (the templates' domain;
    on a CPU its C++ GEMM templates were not measured)."""
    if setting == "auto":
        return str(device).startswith("cuda") and templated
    return setting == "on"
