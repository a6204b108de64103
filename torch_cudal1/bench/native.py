"""Native helpers (sources in ``csrc/``): L2-flush kernel and a C++ output checker.

``build()`` compiles them with ``torch.utils.cpp_extension.load`` into the shared build cache
(``<build cache>/native-<torch>-<cpu|cuda>``); it is called outside the verifier's child (the
benchmark script, ``cudal1 bench --native``, or ``CUDAL1_NATIVE=1``), because a CUDA build takes
minutes on small machines and must not eat a candidate's time limit. ``load()`` imports an
existing build directly from its ``.so`` and returns None when there is none, so the pure-Python
paths stay the default (and the only path on CPU CI unless asked for).

``CUDAL1_NATIVE``: ``0`` never use them, ``1`` build when missing, unset/``auto`` use a prior build.

``export_build`` / ``import_build`` carry a build to another machine with the same torch, CUDA
and sources (a fresh GPU machine spends a minute or more on the CUDA build otherwise): the ``.so``
travels under a name keyed by all three, so a stale one is never imported.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

import torch

from ..options import build_cache_dir, env



def sources_dir(package: Path | None = None) -> Path:
    """The native sources: ``csrc/`` beside the package in a source checkout, the copy a wheel
    installs as ``torch_cudal1/csrc/`` (setup.py) otherwise."""
    package = package or Path(__file__).resolve().parents[1]
    for d in (package.parent / "csrc", package / "csrc"):
        if (d / "cudal1_native.cpp").is_file():
            return d
    return package.parent / "csrc"


CSRC = sources_dir()
_loaded: dict = {}


def _flavour() -> str:
    return "cuda" if torch.cuda.is_available() and torch.version.cuda and (
        os.environ.get("CUDA_HOME") or shutil.which("nvcc")) else "cpu"


def build_dir(flavour: str | None = None) -> Path:
    fl = flavour or _flavour()
    return Path(build_cache_dir()).expanduser() / f"native-{torch.__version__}-{fl}"


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
    mode = str(env("CUDAL1_NATIVE")).lower()
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


def build_key(flavour: str | None = None) -> str:
    """What a build depends on: its sources, torch, CUDA and the flavour."""
    fl = flavour or _flavour()
    h = hashlib.sha256(f"{torch.__version__}|{torch.version.cuda}|{fl}".encode())
    for src in sorted(CSRC.iterdir()):
        if src.suffix in (".cpp", ".cu", ".h", ".cuh"):
            h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()[:16]


def _carried(directory: str | os.PathLike, fl: str) -> Path:
    return Path(directory) / f"{_name(fl)}-{build_key(fl)}.so"


def export_build(directory: str | os.PathLike) -> Path | None:
    """Copy this machine's build into ``directory`` under its key; None when there is none."""
    fl = _flavour()
    so = next(iter(sorted(build_dir(fl).glob(_name(fl) + "*.so"))), None)
    if so is None:
        return None
    Path(directory).mkdir(parents=True, exist_ok=True)
    dest = _carried(directory, fl)
    shutil.copyfile(so, dest)
    return dest


def import_build(directory: str | os.PathLike) -> bool:
    """Put a build carried in ``directory`` where ``load()`` finds it, if one matches this
    machine's sources, torch and CUDA and imports; False otherwise (build it then)."""
    fl = _flavour()
    src = _carried(directory, fl)
    if not src.is_file():
        return False
    d = build_dir(fl)
    d.mkdir(parents=True, exist_ok=True)
    dest = d / f"{_name(fl)}.so"
    shutil.copyfile(src, dest)
    _loaded.pop(fl, None)
    if load(optional=True) is not None:   # the .so is there now: imported, never built
        return True
    dest.unlink(missing_ok=True)   # a carried build that does not import is not left behind
    return False


def prepare(carried: str | os.PathLike, export_to: str | os.PathLike | None = None) -> str:
    """A fresh machine's helpers: the build carried in ``carried`` where it is this machine's,
    else one built here (and copied to ``export_to`` for the next). Says which."""
    if import_build(carried):
        return f"native helpers: carried in {carried}, not built"
    mod = build()
    dest = export_build(export_to) if export_to else None
    return f"native helpers: built here ({mod.__file__})" + (f", exported to {dest}" if dest else "")


if __name__ == "__main__":   # python3 -m torch_cudal1.bench.native CARRIED [EXPORT_TO]
    import sys
    print(prepare(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
