"""Native helpers (``torch_cudal1/csrc``): L2-flush kernel and a C++ output checker.

``build()`` compiles them with ``torch.utils.cpp_extension.load`` into the shared build cache
(``<build cache>/native-<torch>-<cpu|cuda>``); it is called outside the verifier's child (the
benchmark script, ``cudal1 bench --native``, or ``CUDAL1_NATIVE=1``), because a CUDA build takes
minutes on small machines and must not eat a candidate's time limit. ``load()`` imports an
existing build directly from its ``.so`` and returns None when there is none, so the pure-Python
paths stay the default (and the only path on CPU CI unless asked for).

``CUDAL1_NATIVE``: ``0`` never use them, ``1`` build when missing, unset/``auto`` use a prior build.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import torch

CSRC = Path(__file__).resolve().parents[1] / "csrc"
_loaded: dict = {}


def _flavour() -> str:
    return "cuda" if torch.cuda.is_available() and torch.version.cuda and (
        os.environ.get("CUDA_HOME") or shutil.which("nvcc")) else "cpu"


def build_dir(flavour: str | None = None) -> Path:
    from ..verify.runner import default_build_cache_dir
    fl = flavour or _flavour()
    return Path(default_build_cache_dir()).expanduser() / f"native-{torch.__version__}-{fl}"


def _name(flavour: str) -> str:
    return f"cudal1_native_{flavour}"


def build(verbose: bool = False):
    """Compile (or reuse) the helpers and return the module."""
    from torch.utils.cpp_extension import load
    fl = _flavour()
    d = build_dir(fl)
    d.mkdir(parents=True, exist_ok=True)
    sources = [str(CSRC / "cudal1_native.cpp")]
    flags = ["-O3"]
    if fl == "cuda":
        sources.append(str(CSRC / "cudal1_l2.cu"))
        flags.append("-DCUDAL1_WITH_CUDA")
    mod = load(name=_name(fl), sources=sources, extra_cflags=flags,
               extra_cuda_cflags=["-O3", "-DCUDAL1_WITH_CUDA"], build_directory=str(d),
               verbose=verbose)
    _loaded[fl] = mod
    return mod


def load(optional: bool = True):
    """The helpers module, or None (``optional``) when they are not built or are switched off."""
    mode = os.environ.get("CUDAL1_NATIVE", "auto").lower()
    if mode in ("0", "off", "false", "no"):
        return None
    fl = _flavour()
    if fl in _loaded:
        return _loaded[fl]
    so = next(iter(sorted(build_dir(fl).glob(_name(fl) + "*.so"))), None)
    try:
        if so is None:
            if mode in ("1", "on", "true", "yes"):
                return build()
            return None
        spec = importlib.util.spec_from_file_location(_name(fl), str(so))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[fl] = mod
        return mod
    except Exception:  # noqa: BLE001
        if optional:
            return None
        raise
