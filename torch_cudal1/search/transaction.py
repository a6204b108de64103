"""One key's search as a transaction: look up, lock, look up again, search, store, clean up.

Every path that fills the cache goes through ``search_and_store``: the serving process on a miss
(``serve/graph_runner``; ``cudal1 warm`` compiles its recipes through it), the background worker
of ``mode="async"`` (``serve/worker``) and ``cudal1 optimize``. The per-key lock makes one
process search a key while the others wait for its entry; the look-up after the lock is what
turns their wait into a cache hit. A search the engine cut short (``complete=False``) is never
stored, so a later run tries again; the search's work dirs are removed whatever happens.

The callers differ only in what they pass: how an entry is checked before it is served
(``check``: trust and entries from other machines), how long to wait for another process's lock,
where the task's reference outputs come from (the test vectors), and where progress goes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..cache import failures
from ..cache.store import CacheEntry, Timeout
from ..counters import STATS
from ..graph.render import UnsupportedGraph
from ..log import logger
from . import loop
from .store import store_search_result

HIT, STORED, INCOMPLETE, LOCK_TIMEOUT = "hit", "stored", "incomplete", "lock_timeout"


@dataclass
class Outcome:
    """What the transaction did: ``status`` is one of

    * ``hit``: the key was cached (before the lock, or by another process while this one waited
      for it: ``waited``); ``entry`` is it;
    * ``stored``: this process searched and stored ``entry``; ``result`` is the search;
    * ``incomplete``: the search was cut short (``result.stop_reason``); nothing was stored;
    * ``lock_timeout``: another process held the key's lock past the wait; nothing was done.
    """
    status: str
    entry: CacheEntry | None = None
    result: loop.SearchResult | None = None
    waited: bool = False


def _acquire(lock, timeout: float | None) -> bool:
    try:
        lock.acquire(timeout=-1 if timeout is None else timeout)
        return True
    except Timeout:
        return False


def search_and_store(store, key: str, fields: dict, task, options, device: str, *,
                     check: Callable | None = None, looked: bool = False,
                     wait_s: float | None = None, outputs: Callable | None = None,
                     progress: Callable | None = None,
                     stage: Callable[[str], None] | None = None) -> Outcome:
    """Fill ``key`` of ``store`` with the winner of a search of ``task`` (a Task, or a
    zero-argument callable making one: it is rendered only when a search is due).

    ``check(entry) -> entry | None``: whether a cached entry may be served here (None: treated as
    a miss); without it any entry the store loads counts. ``looked``: the caller has just looked
    the key up and missed, so the look-up before the lock is skipped. ``wait_s``: how long to
    wait for another process holding the key's lock (None: as long as it holds it).
    ``outputs()``: the reference's outputs on the task's real inputs, kept as the entry's test
    vectors (None: none kept). ``stage(name)`` is told each step (``load``, ``render``,
    ``search``, storing being part of the search) so that a caller can name the one that failed.
    A ``SearchError`` (no baseline verified) propagates; one whose cause lies in the graph, or a
    graph that cannot be rendered, is remembered (``cache/failures.py``), and a later call for
    the key raises ``KnownFailure`` without searching."""
    say = stage or (lambda _name: None)

    def look() -> CacheEntry | None:
        say("load")
        entry = store.load(key)
        return check(entry) if check is not None and entry is not None else entry

    if not looked:
        entry = look()
        if entry is not None:
            return Outcome(HIT, entry)
    lock = store.lock(key)
    waited = False
    if not _acquire(lock, 0):
        waited = True
        STATS["lock_waits"] += 1
        logger.info("another process is searching %s; waiting%s", key,
                    "" if wait_s is None else f" up to {wait_s:.0f} s (lock_timeout_s)")
        if not _acquire(lock, wait_s):
            return Outcome(LOCK_TIMEOUT, waited=True)
    try:
        entry = look()                    # another process may have stored it meanwhile
        if entry is not None:
            return Outcome(HIT, entry, waited=waited)
        failed = failures.known(store, key)
        if failed is not None:
            say("search")
            STATS["known_failures"] += 1
            raise failures.KnownFailure(key, failed)
        say("render")
        if callable(task):
            try:
                task = task()
            except UnsupportedGraph as e:
                failures.record(store, key, "render", str(e))
                raise
        say("search")
        STATS["searches"] += 1
        try:
            result = loop.run_search(task, options, device, key=key, progress=progress)
        except loop.SearchError as e:
            if e.of_the_graph:
                failures.record(store, key, "search", str(e))
            raise
        try:
            if not result.complete:
                return Outcome(INCOMPLETE, result=result, waited=waited)
            entry = store_search_result(store, key, fields, task, result, device,
                                        outputs=outputs() if outputs is not None else None,
                                        capture_limit_mb=options.capture_limit_mb)
            return Outcome(STORED, entry, result, waited)
        finally:
            result.cleanup()
    finally:
        lock.release()


__all__ = ["HIT", "INCOMPLETE", "LOCK_TIMEOUT", "Outcome", "STORED", "search_and_store"]
