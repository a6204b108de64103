"""``search_and_store``, the one path that fills the cache (serving, the async worker, ``cudal1
optimize`` and ``cudal1 warm`` go through it): look up, lock, look up again, search, store, clean
up. The search itself is replaced here by a fake; what is checked is the transaction."""
import threading
import time

import pytest
import torch

import torch_cudal1.search.loop as loop
from helpers import RELU_TASK
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.contracts import Attempt, Timing, Verdict
from torch_cudal1.engines.baselines import baseline_candidate
from torch_cudal1.options import Options
from torch_cudal1.search import SearchError, SearchResult
from torch_cudal1.search.transaction import (HIT, INCOMPLETE, LOCK_TIMEOUT, STORED,
                                             search_and_store)
from torch_cudal1.task import Task

TASK = RELU_TASK
KEY = "k" * 32
FIELDS = {"graph": "g" * 64}


class FakeSearch:
    """Stands in for ``loop.run_search``: counts calls, returns a result whose cleanup is seen."""

    def __init__(self, complete=True, fail=False, delay=0.0):
        self.calls, self.cleaned, self.complete, self.fail, self.delay = 0, 0, complete, fail, delay

    def __call__(self, task, options, device, *, key="", engine=None, progress=None):
        self.calls += 1
        time.sleep(self.delay)
        if self.fail:
            raise SearchError("no baseline passed verification")
        winner = Attempt(baseline_candidate(task, "eager"), Verdict.ok(),
                         Timing(median_ms=1.0, spread_ms=0.01, n=10))
        result = SearchResult(key=key, winner=winner, attempts=[winner], eager_ms=1.0,
                              inductor_ms=None, rounds_run=0, seconds=0.1,
                              complete=self.complete, stop_reason="" if self.complete else "engine")
        result.cleanup = lambda: setattr(self, "cleaned", self.cleaned + 1)
        return result


@pytest.fixture
def fake(monkeypatch):
    def install(**kw):
        f = FakeSearch(**kw)
        monkeypatch.setattr(loop, "run_search", f)
        return f
    return install


@pytest.fixture
def opts(tmp_path):
    return Options.resolve({"cache_dir": str(tmp_path)}, env={})


def _run(store, opts, **kw):
    return search_and_store(store, KEY, FIELDS, Task(TASK, name="relu2"), opts, "cpu", **kw)


def test_a_miss_is_searched_stored_and_cleaned_up(tmp_path, fake, opts):
    f = fake()
    store = CacheStore(tmp_path)
    calls = []

    def outputs():
        calls.append(1)
        return [torch.ones(2)]
    done = _run(store, opts, outputs=outputs)
    assert done.status == STORED and f.calls == 1 and f.cleaned == 1 and calls == [1]
    assert done.entry.key == KEY and store.load(KEY).winner_origin == "baseline:eager"
    # the next caller finds it before taking the lock: no search, no task rendered
    store.lock = lambda *a, **k: pytest.fail("a hit before the lock takes no lock")
    again = search_and_store(store, KEY, FIELDS, lambda: pytest.fail("rendered"), opts, "cpu")
    assert again.status == HIT and not again.waited and f.calls == 1


def test_looked_skips_the_first_look_up_but_not_the_one_under_the_lock(tmp_path, fake, opts):
    f = fake()
    store = CacheStore(tmp_path)
    _run(store, opts)
    looks = []
    real = store.load
    store.load = lambda key, *a, **k: looks.append(key) or real(key, *a, **k)
    done = _run(store, opts, looked=True)
    assert done.status == HIT and looks == [KEY] and f.calls == 1


def test_an_incomplete_search_is_not_stored(tmp_path, fake, opts):
    f = fake(complete=False)
    store = CacheStore(tmp_path)
    done = _run(store, opts)
    assert done.status == INCOMPLETE and done.result.stop_reason == "engine"
    assert store.load(KEY) is None and f.cleaned == 1
    assert _run(store, opts).status == INCOMPLETE and f.calls == 2   # a later run tries again


def test_a_failed_search_releases_the_lock(tmp_path, fake, opts):
    fake(fail=True)
    store = CacheStore(tmp_path)
    with pytest.raises(SearchError):
        _run(store, opts)
    lock = store.lock(KEY)
    lock.acquire(timeout=0)        # free again
    lock.release()


def test_check_refuses_an_entry(tmp_path, fake, opts):
    fake()
    store = CacheStore(tmp_path)
    _run(store, opts)
    refused = []
    done = search_and_store(store, KEY, FIELDS, Task(TASK), opts, "cpu",
                            check=lambda e: refused.append(e.key))
    assert refused and done.status != HIT


def test_a_waiting_process_gets_the_holders_entry(tmp_path, fake, opts):
    f = fake(delay=0.5)
    store = CacheStore(tmp_path)
    first = threading.Thread(target=_run, args=(store, opts))
    first.start()
    time.sleep(0.2)                # the first holds the lock and searches
    done = _run(CacheStore(tmp_path), opts)
    first.join()
    assert done.status == HIT and done.waited and f.calls == 1


def test_a_lock_held_past_the_wait_gives_up(tmp_path, fake, opts):
    f = fake()
    store = CacheStore(tmp_path)
    held = store.lock(KEY)
    held.acquire()
    try:
        done = _run(CacheStore(tmp_path), opts, wait_s=0.2)
    finally:
        held.release()
    assert done.status == LOCK_TIMEOUT and done.waited and f.calls == 0
