"""One compiled ATen graph: cache lookup or search on the first call, then a cheap dispatch.

Failures never reach the user's model (unless ``strict``): every stage after capture (lift, key,
load, render, search, arbitrate, serve) is inside one boundary (``fallback.report``); the graph
runs on the fallback and one warning names the stage, the cause and where the log is.

Shapes as serving sees them: a graph with dynamic shapes, or a static graph that Dynamo compiled
again for another size of the same code, is served at once by a shape-generic implementation
(``generic``: inductor with dynamic shapes, or eager); an exact size is searched by a background
worker once it has been called ``SEARCH_AFTER_CALLS`` times, and its winner swapped in. No search
runs inside ``forward`` for a new size unless ``new_shapes="search"`` (what ``cudal1 warm`` uses).
"""
from __future__ import annotations

import hashlib
import threading
import time

import torch

from ..cache.key import cache_key, input_metadata, key_fields
from ..cache.tiered import store_for
from ..counters import SEEN_KEYS, STATS
from ..graph.hashing import graph_hash, structure_hash
from ..graph.render import UnsupportedGraph, lift_constants, render_task, rng_kept
from ..log import logger
from ..options import Options
from .fallback import Fallback, report
from .foreground import FOREGROUND


def _device_of(args) -> str:
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type != "cpu":
            return str(a.device) if a.device.index is not None else f"{a.device.type}:0"
    return "cpu"


# An exact size served by the generic implementation is searched in the background at its second
# call: a size met once (one step of a generation whose length grows) is not worth a search.
SEARCH_AFTER_CALLS = 2
# At most this many sizes of one graph are searched in the background (one worker at a time).
MAX_BACKGROUND_SIZES = 8
# New sizes of one graph named at info level (later ones at debug level)
NEW_SIZES_LOGGED = 3
# (Dynamo frame, graph structure with sizes erased) -> (graph, input shapes) compiled for it since
# the frame's first compile: a static graph whose frame compiled the same structure at other
# sizes is a re-specialisation (dynamic=False, or a dimension Dynamo keeps static).
_STRUCTURES: dict = {}
_STRUCTURES_LOCK = threading.Lock()


# (Dynamo frame, the graph's ATen operators in order) -> the reason a verification refused
# inductor's answers for it: Dynamo's recompile of the frame with dynamic shapes is another graph
# (sym-size inputs), whose sizes not searched yet must not get inductor either.
_REFUSED: dict = {}


def _frame_compile():
    """Dynamo's id of the compile in progress (its frame and the frame's compile count), or
    None (internal API moved, or no frame: each graph is then on its own)."""
    try:
        from torch._guards import CompileContext
        cid = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001
        return None
    return None if cid is None or cid.frame_id is None else cid


def _operators_of_frame(gm: torch.fx.GraphModule):
    cid = _frame_compile()
    if cid is None:
        return None
    ops = tuple(str(n.target) for n in gm.graph.nodes if n.op == "call_function"
                and isinstance(n.target, torch._ops.OpOverload)
                and not n.target.name().startswith("aten::sym_"))
    return cid.frame_id, hashlib.sha256(repr(ops).encode()).hexdigest()


def _shapes(example_inputs) -> tuple:
    return tuple(tuple(str(d) for d in x.shape) if isinstance(x, torch.Tensor) else None
                 for x in example_inputs)


def _respecialised(structure: str, specialisation) -> bool:
    """True when Dynamo is compiling this graph's frame again, and an earlier compile of the
    frame (since Dynamo's last reset) had the same structure at other sizes."""
    cid = _frame_compile()
    if cid is None:
        return False
    with _STRUCTURES_LOCK:
        if not cid.frame_compile_id:     # the frame's first compile: forget what came before
            for k in [k for k in _STRUCTURES if k[0] == cid.frame_id]:
                del _STRUCTURES[k]
        seen = _STRUCTURES.setdefault((cid.frame_id, structure), set())
        seen.add(specialisation)
        return len(seen) > 1


def _is_dynamic(example_inputs) -> bool:
    return any(isinstance(x, (torch.SymInt, torch.SymFloat)) for x in example_inputs) or any(
        isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape)
        for x in example_inputs)


def _signature(args) -> tuple:
    return tuple((tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor)
                 else (type(a).__name__, a) for a in args)


def _draws_random(gm: torch.fx.GraphModule) -> str | None:
    """'draws random numbers (op)' where ``gm`` (or a subgraph of it) calls an operator that
    reads the global random state (``nondeterministic_seeded``), else None."""
    for mod in gm.modules():
        if not isinstance(mod, torch.fx.GraphModule):
            continue
        for n in mod.graph.nodes:
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) \
                    and torch.Tag.nondeterministic_seeded in n.target.tags:
                return f"draws random numbers ({n.target})"
    return None


class GraphRunner:
    """The callable aot_autograd calls (boxed: it receives the list of inputs)."""
    _boxed_call = True

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, options: Options):
        self.options = options
        self.dynamic = _is_dynamic(example_inputs)
        self._impl = None                 # the static graph's implementation once chosen
        self._by_signature: dict = {}     # dynamic graphs: one implementation per exact shape
        self._fallback_fn = None
        self._generic_fn = None
        self._background = 0              # sizes of this graph queued for a background search
        self._lock = threading.RLock()
        self._stage = "lift"              # the stage in progress, named by a failure's log line
        self.dynamo_gm = None             # set by the backend when Dynamo's graph takes our inputs
        self.gm, self.consts, self.graph_id, self.resized = gm, [], "?", False
        self._inductor = None             # inductor's build for every size (a dynamic graph's)
        self._inductor_refused = None     # why inductor may not serve it (a verification's refusal)
        self._frame_ops = None            # _REFUSED's key for this graph
        self._new_sizes = 0               # sizes served by the generic implementation so far
        try:
            self.gm, _, self.consts = lift_constants(gm, [])
            self._stage = "key"
            self.graph_id = graph_hash(self.gm.graph)
            self.resized = _respecialised(structure_hash(self.gm.graph),
                                          (self.graph_id, _shapes(example_inputs)))
            self._frame_ops = _operators_of_frame(self.gm)
            # inductor draws other random numbers than eager's from the same seed
            self._inductor_refused = _REFUSED.get(self._frame_ops) or _draws_random(self.gm)
        except Exception as e:  # noqa: BLE001 - the boundary: the graph as captured still runs
            self.gm, self.consts = gm, []
            report(self._stage, e, options, graph=self.graph_id)
            self._impl = self.fallback()

    def wants_inductor_for_every_size(self) -> bool:
        """A dynamic graph whose sizes not searched yet (or whose failures) inductor serves."""
        o = self.options
        return self.dynamic and self._impl is None and not self._inductor_refused and (
            o.fallback == "inductor" or (
            o.generic == "inductor" and o.mode == "search" and o.new_shapes != "search"))

    def set_inductor(self, fn) -> None:
        self._inductor = fn

    # -- the hot path ------------------------------------------------------------------------
    def __call__(self, args):
        impl = self._impl
        if impl is None:
            if self.dynamic:
                impl = self._by_signature.get(_signature(args))
            if impl is None:
                impl = self._first_call(args)
        try:
            return impl(*args, *self.consts)
        except Exception as e:  # noqa: BLE001 - the boundary's serve stage
            return self._serve_failed(impl, e, args)

    # -- choosing an implementation ----------------------------------------------------------
    def _first_call(self, args):
        with self._lock:
            sig = _signature(args) if self.dynamic else None
            impl = self._by_signature.get(sig) if self.dynamic else self._impl
            if impl is None:
                impl = self._choose(list(args) + list(self.consts))
                if self.dynamic:
                    self._by_signature[sig] = impl
                else:
                    self._impl = impl
        return impl

    def _serve_failed(self, impl, e: Exception, args):
        """The served implementation raised. Where the fallback answers the same inputs, the
        implementation was at fault: it is replaced by the fallback (one warning). Where the
        fallback raises too, the error is the graph's own (eager raises it): it propagates."""
        if _marked_dynamic_conflict(e):
            # The caller's torch._dynamo.mark_dynamic reached a winner that compiles inside
            # (torch.compile: the inductor baselines, compiled candidates): its own Dynamo then
            # demands those sizes stay symbolic, where it was found and verified at exact ones.
            # The constraint is the caller's outer graph's, kept there; traced again without it.
            try:
                with torch._dynamo.config.patch(allow_ignore_mark_dynamic=True):
                    return impl(*args, *self.consts)
            except Exception as again:  # noqa: BLE001 - the boundary below decides
                e = again
        fallback = self.fallback()
        if isinstance(impl, (_Deferred, _Pending, Fallback)):
            raise e
        try:
            out = fallback(*args, *self.consts)
        except Exception:
            raise e from None
        self._replace(impl, fallback)
        report("serve", e, self.options, graph=self.graph_id,
               key=str(getattr(impl, "key", "?")))
        return out

    def _replace(self, impl, new) -> None:
        """``new`` serves wherever ``impl`` did."""
        with self._lock:
            if self.dynamic:
                for sig, fn in list(self._by_signature.items()):
                    if fn is impl:
                        self._by_signature[sig] = new
            elif self._impl is impl:
                self._impl = new

    def fallback(self):
        """What runs when a stage fails, and on cache-only misses: ``options.fallback``."""
        if self._fallback_fn is None:
            self._fallback_fn = Fallback(self.gm, self._kind(self.options.fallback),
                                         self.options, self.graph_id, self._inductor)
        return self._fallback_fn

    def generic(self):
        """What serves sizes not searched yet: ``options.generic`` on this graph, with dynamic
        shapes where the graph has them (one build for every size)."""
        if self._generic_fn is None:
            kind = self._kind(self.options.generic)
            if kind == self.fallback().kind:
                self._generic_fn = self.fallback()
            else:
                self._generic_fn = Fallback(self.gm, kind, self.options, self.graph_id,
                                            self._inductor)
        return self._generic_fn

    def _kind(self, kind: str) -> str:
        """Inductor serves a dynamic graph only through its build for every size (made where
        Dynamo's symbolic inputs are the runner's); without one, the graph runs eagerly. Nor
        does it serve a graph whose verification (any size, this process's or the entry's)
        refused inductor's answers: sizes not searched yet are not verified either."""
        if kind == "inductor" and self._inductor_refused:
            return "eager"
        if kind == "inductor" and self.dynamic and self._inductor is None:
            logger.debug("graph %s: dynamic, no inductor build for every size: eager instead",
                         self.graph_id[:12])
            return "eager"
        return kind

    def _choose(self, full: list):
        opts = self.options
        device = _device_of(full)
        key = "?"
        self._stage = "key"
        try:
            fields = key_fields(self.graph_id, input_metadata(full), device, opts.tf32)
            key = cache_key(fields)
            self._stage = "load"
            store = store_for(opts)
            if PEEK.active:        # `cudal1 cache explain`: record the key; load (or fetch) nothing
                SEEN_KEYS.append({"key": key, "graph": self.graph_id, "device": device,
                                  "hit": store.entry_path(key).is_dir(), "fields": fields})
                return self.fallback()
            entry = store.load(key)
            if entry is not None and opts.mode == "async" and self._trusted(store, entry) \
                    and _not_ready(store, entry):
                SEEN_KEYS.append({"key": key, "graph": self.graph_id, "device": device,
                                  "hit": True, "fields": fields})
                store.touch(key)
                return self._serve_when_ready(store, entry, full, key, device)
            entry = self._usable(store, entry, device, full)
            SEEN_KEYS.append({"key": key, "graph": self.graph_id, "device": device,
                              "hit": entry is not None, "fields": fields})
            if entry is not None:
                store.touch(key)
                return self._arbitrated(self._from_entry(entry, device), store, key, device, full)
            STATS["cache_misses"] += 1
            if opts.mode == "cache-only":
                self._cache_only_miss(store, fields, key)
                return self.fallback()
            if opts.mode == "search" and self._new_shape():
                STATS["generic_sizes"] += 1
                self._new_sizes += 1
                # a generation meets a new size at every step: the first few are said
                say = logger.info if self._new_sizes <= NEW_SIZES_LOGGED else logger.debug
                say("cache miss for %s, a new size of graph %s: serving the shape-generic "
                    "%s implementation%s%s", key, self.graph_id[:12], self.generic().kind,
                    "; searched in the background from its second call"
                    if opts.new_shapes == "background" else "",
                    " (further new sizes of this graph are logged at debug level)"
                    if self._new_sizes == NEW_SIZES_LOGGED else "")
                return _Pending(self, fields, key, device)
            logger.info("cache miss for %s: %s", key, _miss_reason(store, fields))
            if opts.mode == "search" and FOREGROUND.over(opts.foreground_budget_s):
                STATS["past_foreground_budget"] += 1
                if FOREGROUND.first_time_over():
                    logger.warning("searches in this process's calls have taken %.0f s "
                                   "(foreground_budget_s=%g): %s and later misses run the %s "
                                   "fallback and are searched in a background worker",
                                   FOREGROUND.spent_s, opts.foreground_budget_s, key,
                                   opts.fallback)
                self._stage = "render"
                return self._search_async(full, fields, key, device)
            if opts.mode == "async":
                self._stage = "render"
                return self._search_async(full, fields, key, device)
            t0 = time.monotonic()
            try:
                impl = self._search(full, fields, key, device)
            finally:
                FOREGROUND.add(time.monotonic() - t0)
            if isinstance(impl, _Deferred):
                return impl
            return self._arbitrated(impl, store, key, device, full)
        except Exception as e:  # noqa: BLE001 - never in the user's way unless strict
            report(self._stage, e, opts, graph=self.graph_id, key=key)
            return self.fallback()

    def _new_shape(self) -> bool:
        """This miss is a size of a graph that serving sees at several sizes: a graph with dynamic
        shapes, or a static graph that Dynamo compiled again for another size."""
        return self.options.new_shapes != "search" and (self.dynamic or self.resized)

    def _queue_background(self, pending: "_Pending") -> None:
        """Search ``pending``'s exact size in a background worker (``new_shapes="background"``)."""
        with self._lock:
            if self.options.new_shapes != "background" or self._background >= MAX_BACKGROUND_SIZES:
                return
            self._background += 1
        try:
            self._stage = "render"
            self._search_async(pending.full, pending.fields, pending.key, pending.device,
                               serving=f"the shape-generic {self.generic().kind} implementation")
        except Exception as e:  # noqa: BLE001 - the generic implementation keeps serving
            report(self._stage, e, self.options, graph=self.graph_id, key=pending.key,
                   instead=f"the shape-generic {self.generic().kind} implementation")

    def _arbitrated(self, impl, store, key: str, device: str, full: list):
        """The winner, or the user's own graph (eager / inductor) where that is faster here."""
        from . import arbiter
        if self.dynamo_gm is None or self.dynamic or not arbiter.enabled(self.options.arbitrate, device):
            return impl
        try:
            # A served cache (cache-only) never times: it follows a decision kept where the
            # cache was warmed (or shipped in its bundle), else serves the winner.
            return arbiter.serve(impl, self.dynamo_gm, full, len(full) - len(self.consts), store,
                                 key, device, graphed=self.options.arbitrate_cudagraph,
                                 may_time=self.options.mode != "cache-only",
                                 autotuned=self.options.arbitrate_max_autotune)
        except Exception as e:  # noqa: BLE001 - arbitration is an optimisation, never a failure
            report("arbitrate", e, self.options, graph=self.graph_id, key=key,
                   instead="the search's winner")
            return impl

    def _usable(self, store, entry, device: str, full: list):
        """``entry`` when this process may serve it, else None: its dir is trusted, and an entry
        made on another machine has passed its check here (cache/foreign.py), against this
        graph's own answers."""
        if entry is None or not self._trusted(store, entry):
            return None
        from ..cache import foreign
        if foreign.needs_check(store, entry):
            ok, _ = foreign.check(store, entry, device, reference=self.gm, inputs=full,
                                  timeout_s=self.options.verify_timeout_s,
                                  max_vector_bytes=int(self.options.capture_limit_mb * 2**20)
                                  + (1 << 20))
            if not ok:
                return None
        return entry

    def _trusted(self, store, entry) -> bool:
        """Entries are code: load them only from a directory this user owns, or when told to."""
        if self.options.trust_cache_dir:
            return True
        problem = store.trust_problem(entry.path)
        if problem is None:
            return True
        STATS["untrusted_entries"] += 1
        if _once(("untrusted", str(store.root))):
            logger.warning("cache dir %s is not trusted (%s): its entries are code and are not "
                           "loaded; treating them as misses. Set options={'trust_cache_dir': True} "
                           "or CUDAL1_TRUST_CACHE_DIR=1 if you trust it", store.root, problem)
        return False

    def _cache_only_miss(self, store, fields: dict, key: str) -> None:
        STATS["cache_only_misses"] += 1
        if _once("cache-only"):
            logger.warning("cache miss for graph %s (key %s) in cache-only mode: running the %s "
                           "fallback (%s). Further cache-only misses of this process are counted "
                           "in torch_cudal1.stats()['cache_only_misses'], not logged",
                           self.graph_id[:12], key, self.options.fallback,
                           _miss_reason(store, fields))
        else:
            logger.debug("cache-only miss %s: %s", key, _miss_reason(store, fields))

    def _note_refusals(self, meta: dict) -> None:
        """An entry's verdict on inductor: refused for its answers (not for time or memory),
        the fallback and the shape-generic implementation of this graph are eager from now."""
        for a in meta.get("attempts") or []:
            try:
                origin, verdict = a["candidate"]["origin"], a.get("verdict") or {}
            except (KeyError, TypeError):
                continue
            if origin == "baseline:inductor" and verdict.get("accepted") is False \
                    and verdict.get("reason") not in _NOT_ABOUT_ANSWERS:
                if self._frame_ops is not None:
                    _REFUSED[self._frame_ops] = verdict.get("reason")
                if not self._inductor_refused:
                    self._inductor_refused = verdict.get("reason")
                    logger.info("graph %s: its verification refused inductor (%s): sizes not "
                                "searched yet and failures run it eagerly", self.graph_id[:12],
                                self._inductor_refused)
                    with self._lock:
                        if getattr(self._generic_fn, "kind", None) == "inductor":
                            self._generic_fn = None
                        if getattr(self._fallback_fn, "kind", None) == "inductor":
                            self._fallback_fn = None
                return

    def _from_entry(self, entry, device: str, hit: bool = True):
        from ..cache.winner import load_winner
        self._note_refusals(entry.meta or {})
        # the process that stored the entry may have built its winner already (cache/winner.py)
        forward = entry.prepared or load_winner(entry, device)
        if hit:
            STATS["cache_hits"] += 1
        what, where = "cache hit" if hit else "cached", ""
        if entry.source == "remote":
            what, where = "remote " + what, f" from {(entry.foreign or {}).get('from', '?')}"
        logger.info("%s %s%s: %s (%s)", what, entry.key, where, entry.winner_origin,
                    _speed(entry.meta))
        call = _as_tuple(forward)
        call.origin = entry.winner_origin   # for the arbiter's record of what it served
        call.key = entry.key
        call.search_ms = _search_times(entry.meta)   # for the arbiter's max-autotune trigger
        return self._checked(call, entry.key, device, foreign=entry.foreign is not None)

    def _checked(self, call, key: str, device: str, foreign: bool = False):
        """The winner, its served calls checked against this graph as ``serve_check`` says
        (serve/audit.py): one that answers unlike the graph is quarantined and replaced by the
        fallback."""
        from . import audit
        opts = self.options
        if not audit.wanted(call.origin, opts.serve_check, foreign):
            return call
        # the verifier's modules are loaded where a winner's calls are checked, not before
        from ..graph.render import written_placeholders
        from ..verify.cudnn_tf32 import compare_precision
        store = store_for(opts)
        checked = None

        def mismatch(why: str) -> None:
            audit.warn_mismatch(store, key, call.origin, why, self.fallback().kind)
            self._replace(checked, self.fallback())

        checked = audit.Checked(
            call, self.gm, self.fallback(), every=opts.serve_check_every(),
            precision=compare_precision(opts.verify_precision(), device,
                                        audit.runs_convolution(self.gm)),
            written=written_placeholders(self.gm), on_mismatch=mismatch,
            on_done=lambda: self._replace(checked, call))
        return checked

    def _search(self, full: list, fields: dict, key: str, device: str):
        """The key's search in this process (``search_and_store``): the graph is rendered as a
        task only when no other process stored the key while this one waited for its lock."""
        from ..search.transaction import HIT, INCOMPLETE, LOCK_TIMEOUT, search_and_store
        opts = self.options

        def task():
            try:
                return render_task(self.gm, full, name=f"graph_{self.graph_id[:12]}")
            except UnsupportedGraph as e:
                raise UnsupportedGraph(f"graph cannot be rendered as a task: {e}") from None

        def outputs():
            with torch.no_grad(), rng_kept(full):
                return self.gm(*full)

        def stage(name: str) -> None:
            self._stage = name

        store = store_for(opts)
        done = search_and_store(store, key, fields, task, opts, device, looked=True,
                                check=lambda e: self._usable(store, e, device, full),
                                wait_s=opts.lock_timeout_s, outputs=outputs, stage=stage)
        if done.status == LOCK_TIMEOUT:
            return self._lock_timed_out(store, key, device, full)
        if done.status == INCOMPLETE:
            raise RuntimeError(f"search incomplete ({done.result.stop_reason}); not cached")
        self._stage = "load"
        return self._from_entry(done.entry, device, hit=done.status == HIT)

    def _lock_timed_out(self, store, key: str, device: str, full: list):
        """Another process holds the key's lock past ``lock_timeout_s``: serve the fallback and
        pick its result up when it releases the lock (a dead holder releases it at once)."""
        STATS["lock_timeouts"] += 1
        STATS["fallbacks"] += 1
        logger.warning("waited %.0f s for another process searching %s (lock_timeout_s); running "
                       "the %s fallback until its result is cached", self.options.lock_timeout_s,
                       key, self.options.fallback)
        signature = _signature(full[: len(full) - len(self.consts)])

        def wait():
            lock = store.lock(key)
            with lock:
                entry = store.load(key)
            entry = self._usable(store, entry, device, full)
            if entry is not None:
                self._swap(signature, self._built(entry, device, full, hit=False), key)

        threading.Thread(target=wait, name=f"cudal1-wait-{key[:8]}", daemon=True).start()
        return _Deferred(self)

    def _built(self, entry, device: str, full: list, hit: bool):
        """The entry's winner, loaded and run once on ``full`` here, on a background thread, so
        that a winner that compiles on its first call (cache/winner.py) does so before it is swapped
        in, not in the serving call after the swap."""
        impl = self._from_entry(entry, device, hit=hit)
        try:
            with torch.no_grad():     # its first call builds it; the answer is dropped
                impl(*full)
            STATS["built_off_path"] += 1
        except Exception as e:  # noqa: BLE001 - the serving call will meet the same failure
            logger.debug("warming the winner of %s up failed (%s: %s)", entry.key,
                         type(e).__name__, e)
        return impl

    def _serve_when_ready(self, store, entry, full: list, key: str, device: str):
        """async mode, a cache hit that is not ready to serve (from another machine and not yet
        checked here, or a winner that compiles on its first call): the fallback serves while a
        background thread checks and builds it, then it is swapped in."""
        signature = _signature(full[: len(full) - len(self.consts)])

        def ready() -> None:
            try:
                usable = self._usable(store, entry, device, full)
                if usable is None:
                    logger.warning("cached entry %s not served; keeping the %s fallback", key,
                                   self.options.fallback)
                    return
                self._swap(signature, self._built(usable, device, full, hit=True), key)
                STATS["async_swaps"] += 1
            except Exception as e:  # noqa: BLE001 - the fallback keeps serving
                logger.warning("preparing the cached winner of %s failed (%s: %s); keeping the %s "
                               "fallback", key, type(e).__name__, e, self.options.fallback)

        logger.info("cache hit %s in async mode: serving the %s fallback while the winner is "
                    "prepared off the serving path", key, self.options.fallback)
        threading.Thread(target=ready, name=f"cudal1-prepare-{key[:8]}", daemon=True).start()
        return _Deferred(self)

    def _swap(self, signature, impl, key: str) -> None:
        with self._lock:
            if self.dynamic:
                self._by_signature[signature] = impl
            else:
                self._impl = impl
        STATS["swaps"] += 1
        logger.info("winner for %s swapped in", key)

    def _search_async(self, full: list, fields: dict, key: str, device: str,
                      serving: str | None = None):
        """Serve ``serving`` (the fallback) now; search in a background worker process
        (``serve/worker.py``) and swap the winner in when it is cached."""
        from . import worker
        store = store_for(self.options)
        task = render_task(self.gm, full, name=f"graph_{self.graph_id[:12]}")
        job = worker.write_job(store, key, fields, task, device, self.options, full)
        signature = _signature(full[: len(full) - len(self.consts)])
        serving = serving or f"the {self.options.fallback} fallback"

        def done(result: dict) -> None:
            entry = self._usable(store, store.load(key), device, full)
            if entry is None:
                logger.warning("background search for %s did not cache a winner (%s); keeping "
                               "%s. Log: %s", key, result.get("error") or result.get("status"),
                               serving, result.get("log"))
                return
            self._swap(signature, self._built(entry, device, full, hit=False), key)
            STATS["async_swaps"] += 1

        STATS["async_jobs"] += 1
        logger.info("cache miss for %s: serving %s; a background worker searches (job %s)", key,
                    serving, job)
        worker.submit(job, done, env=self.options.secret_env(),
                      log_dir=self.options.cache_path / "logs")
        return _Deferred(self)


def _marked_dynamic_conflict(e: BaseException) -> bool:
    try:
        from torch.fx.experimental.symbolic_shapes import ConstraintViolationError
    except Exception:  # noqa: BLE001 - internal API moved: the fallback decides
        return False
    return isinstance(e, ConstraintViolationError)


def _not_ready(store, entry) -> bool:
    """An entry whose first use costs seconds: a check (from another machine) or a build."""
    from ..cache import foreign
    from ..cache.winner import needs_build
    return foreign.needs_check(store, entry) or needs_build(entry.winner_source)


_WARNED: set = set()


def _once(what) -> bool:
    """True the first time ``what`` is seen in this process (one warning per process)."""
    if what in _WARNED:
        return False
    _WARNED.add(what)
    return True


def _miss_reason(store, fields: dict) -> str:
    try:
        from ..cache.explain import miss_reason
        return miss_reason(store, fields)
    except Exception as e:  # noqa: BLE001 - explaining must never break serving
        return f"no explanation ({type(e).__name__})"


class _Peek(threading.local):
    active = False


# While active (``cudal1 cache explain``), runners record their keys in SEEN_KEYS and run the
# fallback: nothing is loaded from the cache and nothing is searched.
PEEK = _Peek()


class _Deferred:
    """The fallback, until the background search replaces the runner's implementation."""

    def __init__(self, runner: GraphRunner):
        self.runner = runner

    def __call__(self, *args):
        return self.runner.fallback()(*args)


class _Pending:
    """A size not searched yet: the runner's shape-generic implementation serves it; at its
    ``SEARCH_AFTER_CALLS``-th call the size is queued for a background search, whose winner the
    runner swaps in for it."""

    def __init__(self, runner: GraphRunner, fields: dict, key: str, device: str):
        self.runner, self.fields, self.key, self.device = runner, fields, key, device
        self.calls = 0
        runner.generic()              # built now, in the serving call that met the size
        self.full = None              # the inputs of the call that queues the search, meanwhile

    def __call__(self, *full):
        self.calls += 1
        if self.calls == SEARCH_AFTER_CALLS:
            self.full = list(full)
            try:
                self.runner._queue_background(self)
            finally:
                self.full = None      # the job holds its own copy of the inputs
        # asked each call: a verification that refused inductor meanwhile makes it eager
        return self.runner.generic()(*full)


def _as_tuple(forward):
    def call(*args):
        out = forward(*args)
        return (out,) if isinstance(out, torch.Tensor) else out
    call.forward = forward
    return call


def _speed(meta: dict) -> str:
    noise = (meta.get("summary") or {}).get("host_noise") or {}
    if noise.get("noisy") and not noise.get("decided", True):
        return "no speedup claimed: the host was too noisy to decide when it was searched"
    w = meta.get("winner") or {}
    parts = []
    if w.get("speedup_vs_eager"):
        parts.append(f"x{w['speedup_vs_eager']:.2f} over eager")
    if w.get("speedup_vs_inductor"):
        parts.append(f"x{w['speedup_vs_inductor']:.2f} over inductor")
    return ", ".join(parts) or "no speedup measured"


# verdicts that say nothing of inductor's answers (the host, the limits)
_NOT_ABOUT_ANSWERS = {"timeout", "memory", "sandbox"}


def _search_times(meta: dict) -> dict:
    """{origin: search-time median ms} of the accepted attempts kept in an entry's metadata."""
    out = {}
    for a in meta.get("attempts") or []:
        try:
            if (a.get("verdict") or {}).get("accepted") and a.get("timing"):
                out[a["candidate"]["origin"]] = float(a["timing"]["median_ms"])
        except (KeyError, TypeError, ValueError):
            continue
    return out
