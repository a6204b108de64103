"""Convolutions in the channels-last memory layout, as built-in candidates.

PyTorch lays 4-D and 5-D tensors out channels-first (NCHW, NCDHW). cuDNN's tensor-core
convolution kernels (TF32 for float32 convolutions by default, bf16/fp16 always) work on
channels-last data (NHWC), so given NCHW it transposes around them or takes other kernels. This
candidate converts the module's 4-D and 5-D parameters and buffers to channels-last once, and each
call's 4-D and 5-D inputs (weights handed in as inputs included, every call). Convolutions then
run channels-last, and so do the pointwise ops and normalisations between them, which keep their
input's layout. Outputs are made contiguous again, as the reference returns them, so that a
caller's ``view`` on them still works. The values are the same convolutions' (the kernels differ
in rounding only, judged by the verifier like any candidate's).

Whether it pays depends on shapes and device (the per-call input conversion and output
conversion are copies), so it is one more candidate, timed like the others. Inductor already
chooses the layout of the convolutions in a graph it compiles (its layout optimisation), so this
is offered on the eager reference, and with cuDNN's autotuning.

Option ``channels_last``: ``auto`` (on a GPU, for graphs with 2-D or 3-D convolutions) | ``on``
| ``off``.
"""
from __future__ import annotations

import torch

from .cudnn_benchmark import _CONVOLUTIONS
from .switched import auto_on_gpu, op_name

WRAPPER = '''

# --- cudal1 built-in: {title} ---
import torch as _cudal1_torch  # noqa: E402
import torch.utils._pytree as _cudal1_cl_pytree  # noqa: E402

_Cudal1ChannelsLastInner = ModelNew


def _cudal1_cl_format(x):
    """channels_last for 4-D tensors, channels_last_3d for 5-D ones, None for anything else."""
    if isinstance(x, _cudal1_torch.Tensor) and not x.is_sparse:
        return {{4: _cudal1_torch.channels_last, 5: _cudal1_torch.channels_last_3d}}.get(x.dim())
    return None


def _cudal1_cl_to(x):
    fmt = _cudal1_cl_format(x)
    return x if fmt is None else x.contiguous(memory_format=fmt)


def _cudal1_cl_contiguous(x):
    return x.contiguous() if _cudal1_cl_format(x) is not None else x


class ModelNew(_cudal1_torch.nn.Module):
    """cudal1 built-in: {doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = _Cudal1ChannelsLastInner(*args, **kwargs)
        with _cudal1_torch.no_grad():
            for t in list(self.inner.parameters()) + list(self.inner.buffers()):
                fmt = _cudal1_cl_format(t)
                if fmt is not None:
                    t.data = t.data.contiguous(memory_format=fmt)

    def forward(self, *inputs):
        # every call, weights handed in as inputs too: a copy kept across calls would go stale
        # where a tensor changes without a new version (a CUDA-graph replay writing into it)
        out = self.inner(*[_cudal1_cl_to(x) for x in inputs])
        return _cudal1_cl_pytree.tree_map(_cudal1_cl_contiguous, out)
'''


def has_spatial_convolutions(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph has a 2-D or 3-D convolution (a 4-D or 5-D weight)."""
    for node in gm.graph.nodes:
        if op_name(node) in _CONVOLUTIONS and len(node.args) > 1:
            weight = node.args[1].meta.get("val") if isinstance(node.args[1], torch.fx.Node) else None
            if isinstance(weight, torch.Tensor) and weight.dim() in (4, 5):
                return True
    return False


def enabled(setting: str, device: str, convolutions: bool) -> bool:
    """``auto``: on a GPU, for graphs with 2-D or 3-D convolutions."""
    return auto_on_gpu(setting, device, convolutions)


def wrap(source: str, doc: str = "the module and its inputs in the channels-last layout") -> str:
    return source.rstrip() + "\n" + WRAPPER.format(title="channels-last layout", doc=doc)
