"""An entry's winner in this process: loaded without compilers, and built where that is cheap.

Loading (``load_winner``, ``instantiate``): the winner's source is executed with
``cpp_extension.load_inline``/``load`` served from the entry's built artefacts (a cache hit runs
no compiler; a missing artefact falls through to a real build and is counted), its module built
on the device, and the global settings its import or construction changed kept to its own calls
(``global_settings.scoped``), as they were when it was verified.

Winners that compile on their first call (``torch.compile`` inside: the inductor baselines,
max-autotune candidates):

* Where an entry is stored, the winner is built once on the real inputs and the artefacts
  inductor made or read for it (FX graph cache, AOTAutograd cache, autotune results, Triton
  kernels: ``torch.compiler.save_cache_artifacts``) go into the entry
  (``artifacts/inductor-cache.bin``, ``record_inductor_cache``). Loading a winner first hands
  them back to inductor (``load_cache_artifacts``), so a warm start, on this machine or one that
  got the entry from the remote tier or a bundle, finds inductor's caches filled: Dynamo traces,
  and inductor loads instead of compiling (CPU kernels' C++ is the exception: inductor keeps the
  source, not the built library, and builds it once per machine).
* ``needs_build`` tells the serving side which winners to build off the serving path before
  swapping them in.

Three callers load winners: serving (``serve/graph_runner``), the store that records inductor's
artefacts (``search/store``) and the sandboxed child that checks an entry against its test
vectors (``cache/vectors``); all load them exactly this way.
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path

from .. import global_settings
from ..counters import STATS
from ..log import logger
from ..task import TENSORS_FILE, load_source
from .store import ARTIFACTS, WINNER, CacheEntry

INDUCTOR_CACHE = "inductor-cache.bin"   # under the entry's artifacts/

_patch_lock = threading.Lock()
_loaded: set = set()
_loaded_lock = threading.Lock()


# -- prebuilt extensions -------------------------------------------------------------------------
def _load_prebuilt(name: str, module_name: str, artifacts: Path, python_module: bool = True):
    """The file torch's ``load_inline``/``load`` would have imported for this call, and only it:
    ``<name>/<module_name>.so`` (the judge kept it because the verified process loaded it,
    ``verify/loaded_builds.py``); anything else beside it is never loaded."""
    so = artifacts / name / f"{module_name}.so"
    if not so.is_file():
        return None
    if not python_module:   # load_inline(..., is_python_module=False): operators registered
        import torch
        torch.ops.load_library(str(so))
        STATS["prebuilt_loaded"] += 1
        return str(so)
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(so))
    spec = importlib.util.spec_from_file_location(module_name, str(so), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules.setdefault(module_name, module)
    STATS["prebuilt_loaded"] += 1
    return module


@contextlib.contextmanager
def prebuilt_extensions(artifacts: Path):
    """While loading a cached winner, serve ``cpp_extension.load_inline``/``load`` from the
    entry's built artefacts so that a cache hit runs no compiler. Missing artefacts fall through
    to a real build (and are counted). A name built again with other sources gets the next
    version's file (``<name>_v1.so``, ...), as torch's own versioning named it when verified."""
    from torch.utils import cpp_extension
    real_inline, real_load = cpp_extension.load_inline, cpp_extension.load
    versions: dict[str, tuple[int, str]] = {}   # name -> (version, the last call's arguments)

    def serve(real):
        def load(name, *args, **kwargs):
            sig = repr((real is real_inline, args, sorted(kwargs.items())))
            version, last = versions.get(name, (-1, None))
            if sig != last:
                version += 1
                versions[name] = (version, sig)
            module_name = name if version == 0 else f"{name}_v{version}"
            python_module = kwargs.get("is_python_module", True)
            mod = _load_prebuilt(name, module_name, artifacts, bool(python_module))
            if mod is None:
                STATS["extension_builds"] += 1
                return real(name, *args, **kwargs)
            return mod
        return load

    with _patch_lock:
        cpp_extension.load_inline, cpp_extension.load = serve(real_inline), serve(real_load)
        try:
            yield
        finally:
            cpp_extension.load_inline, cpp_extension.load = real_inline, real_load


# -- inductor's artefacts ------------------------------------------------------------------------
def needs_build(source: str) -> bool:
    """Whether a winner compiles on its first call (it calls ``torch.compile``)."""
    return "torch.compile(" in source


def load_inductor_cache(artifacts: Path) -> bool:
    """Hand the entry's recorded inductor artefacts to inductor's caches (once per process per
    file); True when some were loaded."""
    path = Path(artifacts) / INDUCTOR_CACHE
    if not path.is_file():
        return False
    key = str(path.resolve())
    with _loaded_lock:
        if key in _loaded:
            return False
        _loaded.add(key)
    import torch
    try:
        info = torch.compiler.load_cache_artifacts(path.read_bytes())
    except Exception as e:  # noqa: BLE001 - another torch's format, a damaged file: compile instead
        logger.debug("inductor artefacts of %s not loaded (%s: %s)", path.parent.parent,
                     type(e).__name__, e)
        return False
    STATS["inductor_caches_loaded"] += 1
    return info is not None


def _fresh_recording():
    """A context in which inductor records only what this build makes or reads."""
    try:
        from torch.compiler._cache import CacheArtifactManager
        return CacheArtifactManager.with_fresh_cache()
    except (ImportError, AttributeError):   # older torch: everything recorded in the process
        return contextlib.nullcontext()


def record_inductor_cache(staging: Path, source: str, device: str, inputs: list):
    """Build the winner in ``staging`` (an entry being written) on ``inputs`` and keep what
    inductor made or read for it in ``staging/artifacts/``. Returns the built forward (a caller
    that serves it next need not build it again), or None when the winner builds nothing."""
    if not needs_build(source) or inputs is None:
        return None
    import torch
    with _fresh_recording():
        forward = instantiate(source, staging, device, f"cudal1_build_{staging.name[:32]}")
        with torch.no_grad():
            forward(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs])
        got = torch.compiler.save_cache_artifacts()
    if got is not None and got[0]:
        d = staging / ARTIFACTS
        d.mkdir(exist_ok=True)
        (d / INDUCTOR_CACHE).write_bytes(got[0])
    return forward


# -- loading ---------------------------------------------------------------------------------------
def instantiate(source: str, entry_dir: Path, device: str, module_name: str, *,
                inductor_cache: bool = True):
    """exec the winner source, build ``ModelNew(*get_init_inputs())`` on ``device``; return its
    bound ``forward``. ``inductor_cache``: hand the entry's inductor artefacts to inductor first
    (``CacheEntry.artifacts_trusted``)."""
    captured = None
    side = entry_dir / TENSORS_FILE
    if side.exists():
        from safetensors.torch import load_file
        captured = load_file(str(side))
    if inductor_cache:   # inductor finds what it built where it was stored
        load_inductor_cache(entry_dir / ARTIFACTS)
    before = global_settings.snapshot()
    with prebuilt_extensions(entry_dir / ARTIFACTS):
        mod = load_source(source, module_name, captured=captured,
                          filename=str(entry_dir / WINNER))
        init = mod.get_init_inputs() if hasattr(mod, "get_init_inputs") else []
        model = mod.ModelNew(*init)
    model = model.to(device).eval()
    # global settings its import or construction changed hold during its calls only, as verified
    model, changes = global_settings.scoped(model, before)
    if changes:
        logger.info("winner %s: its settings kept to its own calls (%s)", module_name,
                    global_settings.describe(changes))
    STATS["winners_loaded"] += 1
    return model.forward


def load_winner(entry: CacheEntry, device: str, module_name: str | None = None):
    """Instantiate the entry's ModelNew without any build: prebuilt extensions come from the
    entry's artefacts. Returns the bound forward."""
    return instantiate(entry.winner_source, Path(entry.path), device,
                       module_name or f"cudal1_winner_{entry.key}",
                       inductor_cache=entry.artifacts_trusted)


__all__ = ["INDUCTOR_CACHE", "instantiate", "load_inductor_cache", "load_winner", "needs_build",
           "prebuilt_extensions", "record_inductor_cache"]
