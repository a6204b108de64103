"""cuDNN's own autotuning for a graph's convolutions, as built-in candidates.

By default cuDNN picks a convolution algorithm from heuristics. With ``cudnn.benchmark`` on, the
first call for each input shape times the algorithms that fit and keeps the fastest for later
calls; on some shapes (3-D, grouped, depthwise, transposed convolutions) that is several times
faster, on others it changes nothing. The algorithms compute the same convolution (they differ
in rounding only, and the verifier's tolerance and its same-input-twice check judge that like
any candidate's). Generated kernels use the switch a lot (39 of CUDA-L1's 192 KernelBench
solutions), globally; here it holds for the candidate's own calls only and the caller's setting
is put back after each.

The first call of each shape pays for the tuning (excluded from timings by their warm-up, and
paid once in a served process).

Option ``cudnn_benchmark``: ``auto`` (on a GPU, for graphs with convolutions) | ``on`` | ``off``.
"""
from __future__ import annotations

import torch

from . import switched
from .switched import auto_on_gpu, op_name

_CONVOLUTIONS = {"convolution", "_convolution", "cudnn_convolution",
                 "cudnn_convolution_transpose", "conv1d", "conv2d", "conv3d",
                 "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}



def has_convolutions(gm: torch.fx.GraphModule) -> bool:
    return any(op_name(node) in _CONVOLUTIONS for node in gm.graph.nodes)


def enabled(setting: str, device: str, convolutions: bool) -> bool:
    """``auto``: on a GPU, for graphs with convolutions (and while the caller has not switched
    cuDNN's autotuning on already: then every candidate has it)."""
    return auto_on_gpu(setting, device, convolutions and not torch.backends.cudnn.benchmark)


def wrap(source: str, doc: str = "cuDNN's autotuning for this module's convolutions") -> str:
    return switched.wrap(source, tag="cudnn", title="cuDNN's autotuning for this module's "
                         "convolutions", doc=doc, on="cudnn_benchmark_on", off="cudnn_benchmark_off")
