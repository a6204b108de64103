"""One compiled ATen graph: cache lookup or search on the first call, then a cheap dispatch.

Failures never reach the user's model (unless ``strict``): the graph runs on the fallback and one
warning says what failed and where the log is.
"""
from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

import torch

from .cache.key import cache_key, input_metadata, key_fields
from .graph.hashing import graph_hash
from .graph.render import UnsupportedGraph, lift_constants, render_task
from .log import logger
from .options import Options
from .runtime import SEEN_KEYS, STATS, store_for


def _device_of(args) -> str:
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type != "cpu":
            return str(a.device) if a.device.index is not None else f"{a.device.type}:0"
    return "cpu"


def _signature(args) -> tuple:
    return tuple((tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor)
                 else (type(a).__name__, a) for a in args)


class GraphRunner:
    """The callable aot_autograd calls (boxed: it receives the list of inputs)."""
    _boxed_call = True

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, options: Options):
        self.options = options
        self.gm, _, self.consts = lift_constants(gm, [])
        self.graph_id = graph_hash(self.gm.graph)
        self.dynamic = any(isinstance(x, (torch.SymInt, torch.SymFloat)) for x in example_inputs) or any(
            isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape)
            for x in example_inputs)
        self._impl = None                 # the static graph's implementation once chosen
        self._by_signature: dict = {}     # dynamic graphs: one implementation per exact shape
        self._fallback_fn = None
        self._lock = threading.Lock()

    # -- the hot path ------------------------------------------------------------------------
    def __call__(self, args):
        impl = self._impl
        if impl is not None:
            return impl(*args, *self.consts)
        if self.dynamic:
            impl = self._by_signature.get(_signature(args))
            if impl is not None:
                return impl(*args, *self.consts)
        return self._first_call(args)

    # -- choosing an implementation ----------------------------------------------------------
    def _first_call(self, args):
        with self._lock:
            full = list(args) + list(self.consts)
            impl = self._choose(full)
            if self.dynamic:
                self._by_signature[_signature(args)] = impl
            else:
                self._impl = impl
        return impl(*full)

    def fallback(self):
        if self._fallback_fn is None:
            gm = self.gm
            if self.options.fallback == "inductor":
                self._fallback_fn = torch.compile(gm.forward, dynamic=False)
            else:
                self._fallback_fn = gm.forward
        return self._fallback_fn

    def _log_path(self, key: str) -> Path:
        d = self.options.cache_path / "logs"
        d.mkdir(parents=True, exist_ok=True)
        return d / f"{key}.log"

    def _choose(self, full: list):
        opts = self.options
        device = _device_of(full)
        key = "?"
        try:
            fields = key_fields(self.graph_id, input_metadata(full), device)
            key = cache_key(fields)
            store = store_for(opts)
            entry = store.load(key)
            SEEN_KEYS.append({"key": key, "graph": self.graph_id, "device": device,
                              "hit": entry is not None, "fields": fields})
            if entry is not None:
                return self._from_entry(entry, device)
            STATS["cache_misses"] += 1
            if opts.mode == "cache-only":
                logger.warning("cache miss for graph %s (key %s) in cache-only mode: running the "
                               "%s fallback", self.graph_id[:12], key, opts.fallback)
                return self._wrap(self.fallback())
            if opts.mode == "async":
                return self._search_async(full, fields, key, device)
            return self._search(full, fields, key, device)
        except Exception as e:  # noqa: BLE001 - never in the user's way unless strict
            if opts.strict:
                raise
            log = self._write_log(key, e)
            logger.warning("cudal1 failed for graph %s (%s: %s); running the %s fallback. Log: %s",
                           key, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "",
                           opts.fallback, log)
            STATS["fallbacks"] += 1
            return self._wrap(self.fallback())

    def _write_log(self, key: str, e: BaseException) -> Path | str:
        try:
            path = self._log_path(key if key != "?" else self.graph_id[:32])
            with open(path, "a") as f:
                f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} graph {self.graph_id}\n")
                f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
            return path
        except OSError:
            return "(no log: cache dir not writable)"

    @staticmethod
    def _wrap(fn):
        return fn

    def _from_entry(self, entry, device: str, hit: bool = True):
        from .entry import load_winner
        forward = load_winner(entry, device)
        if hit:
            STATS["cache_hits"] += 1
        logger.info("%s %s: %s (%s)", "cache hit" if hit else "cached", entry.key,
                    entry.winner_origin, _speed(entry.meta.get("winner", {})))
        return _as_tuple(forward)

    def _search(self, full: list, fields: dict, key: str, device: str):
        from .entry import store_search_result
        from .search import run_search
        opts = self.options
        store = store_for(opts)
        with store.lock(key):
            entry = store.load(key)   # another process may have finished while we waited
            if entry is not None:
                return self._from_entry(entry, device)
            try:
                task = render_task(self.gm, full, name=f"graph_{self.graph_id[:12]}")
            except UnsupportedGraph as e:
                raise UnsupportedGraph(f"graph cannot be rendered as a task: {e}") from None
            STATS["searches"] += 1
            result = run_search(task, opts, device, key=key)
            try:
                if not result.complete:
                    raise RuntimeError(f"search incomplete ({result.stop_reason}); not cached")
                with torch.no_grad():
                    outputs = self.gm(*full)
                entry = store_search_result(store, key, fields, task, result, device,
                                            outputs=outputs, capture_limit_mb=opts.capture_limit_mb)
            finally:
                result.cleanup()
        return self._from_entry(entry, device, hit=False)

    def _search_async(self, full: list, fields: dict, key: str, device: str):
        """Serve the fallback now; search in the background and swap the winner in."""
        snapshot = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in full]
        signature = _signature(full[: len(full) - len(self.consts)])

        def work():
            try:
                impl = self._search(snapshot, fields, key, device)
            except Exception as e:  # noqa: BLE001
                log = self._write_log(key, e)
                logger.warning("background search for %s failed (%s); keeping the fallback. Log: %s",
                               key, e, log)
                return
            with self._lock:
                if self.dynamic:
                    self._by_signature[signature] = impl
                else:
                    self._impl = impl
            logger.info("background search for %s finished: winner swapped in", key)

        t = threading.Thread(target=work, name=f"cudal1-search-{key[:8]}", daemon=True)
        t.start()
        self.background = t
        return _Deferred(self)


class _Deferred:
    """The fallback, until the background search replaces the runner's implementation."""

    def __init__(self, runner: GraphRunner):
        self.runner = runner

    def __call__(self, *args):
        return self.runner.fallback()(*args)


def _as_tuple(forward):
    def call(*args):
        out = forward(*args)
        return (out,) if isinstance(out, torch.Tensor) else out
    call.forward = forward
    return call


def _speed(w: dict) -> str:
    parts = []
    if w.get("speedup_vs_eager"):
        parts.append(f"x{w['speedup_vs_eager']:.2f} over eager")
    if w.get("speedup_vs_inductor"):
        parts.append(f"x{w['speedup_vs_inductor']:.2f} over inductor")
    return ", ".join(parts) or "no timing"
