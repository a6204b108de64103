"""Convolutions the user lets cuDNN run in TF32 are compared at TF32's bounds.

PyTorch's default ``torch.backends.cudnn.allow_tf32 = True`` lets cuDNN run float32
convolutions (and its RNNs) on TF32 tensor cores, independently of
``float32_matmul_precision``. Which algorithm cuDNN picks (and so whether TF32 is used) depends on
the shapes, the layout and ``cudnn.benchmark``: eager's default pick for a 3-channel input may be
a float32 one while channels-last or a benchmarked pick is TF32, with about 3e-4 of
norm-relative error. That error is what the user's own setting allows PyTorch itself, so at
``"highest"`` a graph whose reference runs a cuDNN convolution under that setting is compared at
``"high"``'s bounds; its matrix products are then compared at those bounds too (the output's
error cannot be split between them). With ``allow_tf32 = False`` (or
``cudnn.conv.fp32_precision = "ieee"``) nothing changes.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ATen ops that reach cuDNN's convolutions and RNNs (the composite ones decompose to these)
_OPS = ("convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose",
        "_cudnn_rnn", "miopen_convolution")


def allowed(device: str) -> bool:
    """The process's setting lets cuDNN run float32 convolutions in TF32 on ``device``."""
    if not str(device).startswith("cuda"):
        return False
    conv = getattr(torch.backends.cudnn, "conv", None)
    per_backend = getattr(conv, "fp32_precision", None)
    if per_backend in ("tf32", "ieee"):
        return per_backend == "tf32"
    try:
        return bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:   # legacy and per-backend settings mixed: read as not allowed
        return False


class _Seen(TorchDispatchMode):
    """Notes whether a float32 convolution (or cuDNN RNN) ran; changes nothing."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.seen and func.overloadpacket.__name__ in _OPS:
            first = args[0] if args else None
            if isinstance(first, torch.Tensor) and first.dtype == torch.float32:
                self.seen = True
        return func(*args, **(kwargs or {}))


def run_noting(fn, *args):
    """``fn(*args)`` and whether it ran a float32 convolution. Code that a dispatch mode breaks
    is called again without it, and read as running none."""
    mode = _Seen()
    try:
        with mode:
            out = fn(*args)
        return out, mode.seen
    except Exception:  # noqa: BLE001 - the mode only observes; the plain call decides
        return fn(*args), False


def compare_precision(precision: str, device: str, runs_conv: bool) -> str:
    """The precision outputs are compared at: ``"high"`` where the user asked for
    ``"highest"`` but lets cuDNN use TF32 and the reference runs a float32 convolution."""
    if precision == "highest" and runs_conv and allowed(device):
        return "high"
    return precision
