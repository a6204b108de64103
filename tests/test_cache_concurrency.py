"""Many processes compiling the same model against one cache directory at once (real processes):
one search per key, the others wait for it; a bounded wait falls back and picks the result up."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from torch_cudal1.cache.store import CacheStore

ROOT = Path(__file__).resolve().parents[1]

# The child: patches run_search so the test controls when the search happens, compiles the model,
# calls it, and prints one JSON line. ARRIVE_DIR: every process touches a file there when it
# asks for the key's lock; the searcher waits until EXPECT processes have arrived, so the others
# really wait on its lock. GO_FILE: the searcher also waits for this file before searching.
CHILD = r"""
import json, os, pathlib, sys, time, torch, torch.nn as nn
import torch_cudal1, torch_cudal1.search.loop, torch_cudal1.cache.store as cs
arrive = pathlib.Path(os.environ["ARRIVE_DIR"])
real_lock, real_search = cs.CacheStore.lock, torch_cudal1.search.loop.run_search
def lock(self, key, timeout=-1):
    (arrive / str(os.getpid())).touch()
    return real_lock(self, key, timeout)
def run_search(*a, **k):
    t0 = time.monotonic()
    while len(list(arrive.iterdir())) < int(os.environ["EXPECT"]) and time.monotonic() - t0 < 120:
        time.sleep(0.1)
    go = os.environ.get("GO_FILE")
    if go:
        pathlib.Path(go + ".searching").touch()
        while not os.path.exists(go) and time.monotonic() - t0 < 300:
            time.sleep(0.1)
    return real_search(*a, **k)
cs.CacheStore.lock = lock
torch_cudal1.search.loop.run_search = run_search
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)).eval()
x = torch.randn(3, 16)
opts = {"baselines": "eager", "rounds": 0, "trials": 1}
opts.update(json.loads(os.environ.get("OPTS", "{}")))
c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    err = (c(x) - m(x)).abs().max().item()
    swapped = None
    if os.environ.get("WAIT_SWAP"):
        t0 = time.monotonic()
        while not torch_cudal1.stats().get("swaps") and time.monotonic() - t0 < 300:
            time.sleep(0.2)
        swapped = bool(torch_cudal1.stats().get("swaps"))
        err = max(err, (c(x) - m(x)).abs().max().item())
print(json.dumps({"err": err, "stats": torch_cudal1.stats(), "swapped": swapped}))
"""


def _start(cache, arrive, expect, **env):
    full = dict(os.environ, PYTHONPATH=str(ROOT), CUDAL1_CACHE_DIR=str(cache),
                ARRIVE_DIR=str(arrive), EXPECT=str(expect), **env)
    return subprocess.Popen([sys.executable, "-c", CHILD], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(p, timeout=600):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err[-3000:]
    r = json.loads(out.strip().splitlines()[-1])
    r["_stderr"] = _ERR.pop(p.pid, "") + err
    return r


def test_processes_starting_together_search_once(tmp_path):
    arrive = tmp_path / "arrive"
    arrive.mkdir()
    procs = [_start(tmp_path / "cache", arrive, 3) for _ in range(3)]
    results = [_result(p) for p in procs]
    assert all(r["err"] < 1e-5 for r in results)
    stats = [r["stats"] for r in results]
    assert sum(s.get("searches", 0) for s in stats) == 1, stats
    assert sum(s.get("cache_hits", 0) for s in stats) == 2, stats
    assert sum(s.get("lock_waits", 0) for s in stats) == 2, stats    # they waited, not raced
    assert not any(s.get("fallbacks") for s in stats)
    assert len(CacheStore(tmp_path / "cache").keys()) == 1


def test_bounded_wait_falls_back_then_swaps_the_result_in(tmp_path):
    arrive = tmp_path / "arrive"
    arrive.mkdir()
    go = tmp_path / "go"
    holder = _start(tmp_path / "cache", arrive, 1, GO_FILE=str(go))
    waiter = None
    try:
        t0 = time.monotonic()
        while not Path(str(go) + ".searching").exists():       # the holder has the lock
            assert time.monotonic() - t0 < 300 and holder.poll() is None
            time.sleep(0.1)
        waiter = _start(tmp_path / "cache", arrive, 1, WAIT_SWAP="1",
                        OPTS=json.dumps({"lock_timeout_s": 2}))
        t0 = time.monotonic()
        while "lock_timeout_s); running" not in _peek_stderr(waiter):
            assert time.monotonic() - t0 < 300 and waiter.poll() is None
            time.sleep(0.2)
        go.touch()                                               # let the holder search now
        r = _result(waiter)
        h = _result(holder)
    finally:
        for p in (holder, waiter):
            if p is not None and p.poll() is None:
                p.kill()
    assert r["err"] < 1e-5 and r["swapped"]
    assert r["stats"].get("lock_timeouts") == 1 and not r["stats"].get("searches")
    assert h["stats"].get("searches") == 1
    fallbacks = [ln for ln in r["_stderr"].splitlines() if "fallback" in ln]
    assert len(fallbacks) == 1 and "lock_timeout_s" in fallbacks[0], r["_stderr"]
    assert "swapped in" in r["_stderr"]


_ERR: dict = {}


def _peek_stderr(p) -> str:
    """Read what the child has written to stderr so far without blocking."""
    import fcntl
    fd = p.stderr.fileno()
    fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    try:
        chunk = p.stderr.read()
    except (BlockingIOError, TypeError):
        chunk = None
    _ERR[p.pid] = _ERR.get(p.pid, "") + (chunk or "")
    return _ERR[p.pid]
