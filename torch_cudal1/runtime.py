"""Loading a winner's source into the serving process, without compilers."""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
import threading
from collections import Counter
from pathlib import Path


from . import global_settings
from .cache.store import ARTIFACTS, CacheStore
# A winner sees the same cudal1 modules loaded when it is served as in the worker that verified
# it (harness/worker.py), so their presence cannot tell it which of the two it is in.
from .harness import audit, calls, errors, guards, protocol, state  # noqa: F401
from .task import TENSORS_FILE, load_source

# Process-wide counters; tests and `cudal1` reports read them (e.g. a cache hit runs no search).
STATS: Counter = Counter()
# Every graph key this process asked for: dicts with key, graph, device, outcome.
SEEN_KEYS: list = []
_patch_lock = threading.Lock()


def _load_prebuilt(name: str, artifacts: Path):
    for so in sorted((artifacts / name).glob(f"{name}*.so")) if (artifacts / name).is_dir() else []:
        loader = importlib.machinery.ExtensionFileLoader(name, str(so))
        spec = importlib.util.spec_from_file_location(name, str(so), loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        sys.modules.setdefault(name, module)
        STATS["prebuilt_loaded"] += 1
        return module
    return None


@contextlib.contextmanager
def prebuilt_extensions(artifacts: Path):
    """While loading a cached winner, serve ``cpp_extension.load_inline``/``load`` from the
    entry's built artefacts so that a cache hit runs no compiler. Missing artefacts fall through
    to a real build (and are counted)."""
    from torch.utils import cpp_extension
    real_inline, real_load = cpp_extension.load_inline, cpp_extension.load

    def serve(real):
        def load(name, *args, **kwargs):
            mod = _load_prebuilt(name, artifacts)
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


def instantiate(source: str, entry_dir: Path, device: str, module_name: str):
    """exec the winner source, build ``ModelNew(*get_init_inputs())`` on ``device``; return its
    bound ``forward``."""
    captured = None
    side = entry_dir / TENSORS_FILE
    if side.exists():
        from safetensors.torch import load_file
        captured = load_file(str(side))
    from .prepare import load_inductor_cache
    load_inductor_cache(entry_dir / ARTIFACTS)   # inductor finds what it built where it was stored
    before = global_settings.snapshot()
    with prebuilt_extensions(entry_dir / ARTIFACTS):
        mod = load_source(source, module_name, captured=captured,
                          filename=str(entry_dir / "winner.py"))
        init = mod.get_init_inputs() if hasattr(mod, "get_init_inputs") else []
        model = mod.ModelNew(*init)
    model = model.to(device).eval()
    # global settings its import or construction changed hold during its calls only, as verified
    model, changes = global_settings.scoped(model, before)
    if changes:
        from .log import logger
        logger.info("winner %s: its settings kept to its own calls (%s)", module_name,
                    global_settings.describe(changes))
    STATS["winners_loaded"] += 1
    return model.forward


def store_for(options) -> CacheStore:
    """The local cache dir; with ``remote_cache`` set, the same dir backed by the shared tier."""
    store = CacheStore(options.cache_path)
    url = getattr(options, "remote_cache", None)
    if url:
        from .cache.tiered import TieredStore
        store = TieredStore.from_url(store, url, getattr(options, "remote_timeout_s", 5.0),
                                     getattr(options, "remote_secret", None))
    return store
