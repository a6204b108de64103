"""A ModelNew whose calls run with a process-wide switch on, the caller's setting put back after
each call (the built-in TF32 and cuDNN-autotuning candidates), and the op names of a graph that
decide where such a candidate is proposed."""
from __future__ import annotations

import torch

from ...options import auto_on_gpu  # noqa: F401 - the built-in families' auto | on | off rule

WRAPPER = '''

# --- cudal1 built-in: {title} ---
import torch as _cudal1_torch  # noqa: E402
from torch_cudal1.global_settings import {on} as _cudal1_{tag}_on  # noqa: E402
from torch_cudal1.global_settings import {off} as _cudal1_{tag}_off  # noqa: E402

_Cudal1{Tag}Inner = ModelNew


class ModelNew(_cudal1_torch.nn.Module):
    """cudal1 built-in: {doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = _Cudal1{Tag}Inner(*args, **kwargs)
        # its forward itself: one nn.Module call less per call (a few us on a slow host; the
        # wrapped module is our own rendering of the task, without hooks)
        object.__setattr__(self, "_cudal1_forward", self.inner.forward)

    def forward(self, *inputs):
        saved = _cudal1_{tag}_on()
        try:
            return self._cudal1_forward(*inputs)
        finally:
            _cudal1_{tag}_off(saved)   # the caller's setting exactly, whatever happened
'''


def wrap(source: str, *, tag: str, title: str, doc: str, on: str, off: str) -> str:
    """``source`` (defining ModelNew) with ModelNew's calls between ``global_settings.<on>()``
    and ``global_settings.<off>(saved)``; ``tag`` keeps its names apart from other wrappers'."""
    return source.rstrip() + "\n" + (
        WRAPPER.replace("{title}", title).replace("{doc}", doc).replace("{on}", on)
        .replace("{off}", off).replace("{tag}", tag).replace("{Tag}", tag.capitalize()))


def op_name(node: torch.fx.Node) -> str:
    """The ATen op's name without overload (``mm`` for ``aten.mm.default``), '' for other nodes."""
    if node.op != "call_function":
        return ""
    packet = getattr(node.target, "overloadpacket", None)
    return getattr(packet if packet is not None else node.target, "__name__", "")
