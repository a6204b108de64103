"""Winners that compile on their first call (``torch.compile`` inside: the inductor baselines,
max-autotune candidates): built where it costs no serving call, and warm from inductor's caches.

* Where an entry is stored, the winner is built once on the real inputs and the artefacts
  inductor made or read for it (FX graph cache, AOTAutograd cache, autotune results, Triton
  kernels: ``torch.compiler.save_cache_artifacts``) go into the entry
  (``artifacts/inductor-cache.bin``). Loading a winner (``runtime.instantiate``) first hands them
  back to inductor (``load_cache_artifacts``), so a warm start, on this machine or one that got
  the entry from the remote tier or a bundle, finds inductor's caches filled: Dynamo traces, and
  inductor loads instead of compiling (CPU kernels' C++ is the exception: inductor keeps the
  source, not the built library, and builds it once per machine).
* ``warm_up`` runs a freshly loaded winner once, on the caller's inputs, before the runner swaps it
  in: the async worker's winner and a winner picked up after a lock wait are built on the
  launcher's thread, never in the serving call that follows the swap.
"""
from __future__ import annotations

import threading
from pathlib import Path

INDUCTOR_CACHE = "inductor-cache.bin"   # under the entry's artifacts/

_loaded: set = set()
_loaded_lock = threading.Lock()


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
        from .log import logger
        logger.debug("inductor artefacts of %s not loaded (%s: %s)", path.parent.parent,
                     type(e).__name__, e)
        return False
    from .runtime import STATS
    STATS["inductor_caches_loaded"] += 1
    return info is not None


def _fresh_recording():
    """A context in which inductor records only what this build makes or reads."""
    try:
        from torch.compiler._cache import CacheArtifactManager
        return CacheArtifactManager.with_fresh_cache()
    except (ImportError, AttributeError):   # older torch: everything recorded in the process
        import contextlib
        return contextlib.nullcontext()


def record_inductor_cache(staging: Path, source: str, device: str, inputs: list):
    """Build the winner in ``staging`` (an entry being written) on ``inputs`` and keep what
    inductor made or read for it in ``staging/artifacts/``. Returns the built forward (a caller
    that serves it next need not build it again), or None when the winner builds nothing."""
    if not needs_build(source) or inputs is None:
        return None
    import torch

    from .runtime import instantiate
    with _fresh_recording():
        forward = instantiate(source, staging, device, f"cudal1_build_{staging.name[:32]}")
        with torch.no_grad():
            forward(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs])
        got = torch.compiler.save_cache_artifacts()
    if got is not None and got[0]:
        d = staging / "artifacts"
        d.mkdir(exist_ok=True)
        (d / INDUCTOR_CACHE).write_bytes(got[0])
    return forward


def warm_up(call, inputs: list) -> None:
    """Run ``call`` once on ``inputs`` (its first call builds it); the answer is dropped."""
    import torch
    with torch.no_grad():
        call(*inputs)


__all__ = ["INDUCTOR_CACHE", "load_inductor_cache", "needs_build", "record_inductor_cache",
           "warm_up"]
