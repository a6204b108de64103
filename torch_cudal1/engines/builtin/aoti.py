"""AOTInductor around any ModelNew source: inductor's kernels behind a C++ wrapper.

A ``torch.compile``'d module pays, per call, Dynamo's guards, AOT autograd's runtime wrapper and
inductor's Python wrapper (tens of µs): on launch-bound graphs that is most of the time, and a
winner served inside the backend pays a second Dynamo frame on top of the user's. AOTInductor
compiles the same graph with the same kernels into a package (``.pt2``: a shared library and
its weights) whose call runs no Python per kernel and evaluates no guards.

The package is built on the first call (``torch.export`` needs real inputs on the real device)
into the verifier's build directory, which the cache keeps as the entry's artefacts; a cached
winner finds it next to its source and only loads it — no compiler on a cache hit. It computes
with the module's own parameters and buffers, not the copies baked in at build time. The package
is specialised to the first call's shapes, strides, dtypes, devices and non-tensor values; any
other call, or a call that records autograd, runs the wrapped module as it is.
"""
from __future__ import annotations

import hashlib

from .switched import auto_on_gpu

WRAPPER = '''

# --- cudal1 built-in: AOTInductor package of the ModelNew above -------------------------------
import os as _cudal1_os  # noqa: E402

import torch as _cudal1_torch  # noqa: E402

_Cudal1AotiInner = ModelNew
_CUDAL1_AOTI_NAME = "{name}"


def _cudal1_aoti_path(device):
    """The cached winner's artefact if there is one (a cache hit), else this build's own."""
    here = _cudal1_os.path.dirname(_cudal1_os.path.abspath(__file__))
    fname = f"{_CUDAL1_AOTI_NAME}-{device.type}.pt2"
    cached = _cudal1_os.path.join(here, "artifacts", fname)
    if _cudal1_os.path.exists(cached):
        return cached
    return _cudal1_os.path.join(_cudal1_os.environ.get("TORCH_EXTENSIONS_DIR") or here, fname)


class ModelNew(_cudal1_torch.nn.Module):
    """cudal1 built-in: {doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = _Cudal1AotiInner(*args, **kwargs)
        self._aoti = None
        self._aoti_sig = None

    @staticmethod
    def _sig(inputs):
        return tuple((x.shape, x.stride(), x.dtype, x.device) if isinstance(x, _cudal1_torch.Tensor)
                     else ("=", type(x).__name__, repr(x)) for x in inputs)

    def _load(self, inputs):
        device = next((x.device for x in inputs if isinstance(x, _cudal1_torch.Tensor)),
                      _cudal1_torch.device("cpu"))
        path = _cudal1_aoti_path(device)
        if not _cudal1_os.path.exists(path):
            _cudal1_os.makedirs(_cudal1_os.path.dirname(path), exist_ok=True)
            with _cudal1_torch.no_grad():
                program = _cudal1_torch.export.export(self.inner, tuple(inputs), strict=False)
                _cudal1_torch._inductor.aoti_compile_and_package(program, package_path=path)
        index = device.index if device.type == "cuda" and device.index is not None else -1
        package = _cudal1_torch._inductor.aoti_load_package(path, device_index=index)
        # The package's weights are those at build time; serve this module's own (the same
        # tensors, so later in-place updates and load_state_dict are seen too).
        state = self.inner.state_dict(keep_vars=True)
        package.load_constants({k: state[k] for k in package.get_constant_fqns() if k in state},
                               check_full_update=False, user_managed=True)
        self._aoti = package
        self._aoti_sig = self._sig(inputs)
        self._trainable = any(p.requires_grad for p in self.parameters())

    def forward(self, *inputs):
        if self._aoti is None:
            if _cudal1_torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters()):
                return self.inner(*inputs)
            self._load(inputs)
        elif self._sig(inputs) != self._aoti_sig or (self._trainable and _cudal1_torch.is_grad_enabled()):
            return self.inner(*inputs)
        return self._aoti(*inputs)
'''


def wrap(source: str, doc: str = "AOTInductor package") -> str:
    """``source`` (defining ModelNew with zero-argument ``super()``) with ModelNew wrapped."""
    name = "cudal1_aoti_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    return source.rstrip() + "\n" + WRAPPER.replace("{doc}", doc).replace("{name}", name)


def enabled(setting: str, device: str) -> bool:
    """``auto``: on a GPU (on a CPU the C++ build of every graph costs more than it saves)."""
    return auto_on_gpu(setting, device)
