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

_CONVOLUTIONS = {"convolution", "_convolution", "cudnn_convolution",
                 "cudnn_convolution_transpose", "conv1d", "conv2d", "conv3d",
                 "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}

WRAPPER = '''

# --- cudal1 built-in: cuDNN's autotuning for this module's convolutions ---------------------
import torch as _cudal1_torch  # noqa: E402

_Cudal1CudnnInner = ModelNew


class ModelNew(_cudal1_torch.nn.Module):
    """cudal1 built-in: {doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = _Cudal1CudnnInner(*args, **kwargs)
        # its forward itself: one nn.Module call less per call (our own rendering, no hooks)
        object.__setattr__(self, "_cudal1_forward", self.inner.forward)

    def forward(self, *inputs):
        cudnn = _cudal1_torch.backends.cudnn
        saved = cudnn.benchmark
        cudnn.benchmark = True
        try:
            return self._cudal1_forward(*inputs)
        finally:
            cudnn.benchmark = saved   # the caller's setting, whatever happened
'''


def has_convolutions(gm: torch.fx.GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        packet = getattr(node.target, "overloadpacket", None)
        name = getattr(packet, "__name__", "") if packet is not None else \
            getattr(node.target, "__name__", "")
        if name in _CONVOLUTIONS:
            return True
    return False


def enabled(setting: str, device: str, convolutions: bool) -> bool:
    """``auto``: on a GPU, for graphs with convolutions (and while the caller has not switched
    cuDNN's autotuning on already: then every candidate has it)."""
    if setting == "auto":
        return (str(device).startswith("cuda") and convolutions
                and not torch.backends.cudnn.benchmark)
    return setting == "on"


def wrap(source: str, doc: str = "cuDNN's autotuning for this module's convolutions") -> str:
    return source.rstrip() + "\n" + WRAPPER.replace("{doc}", doc)
