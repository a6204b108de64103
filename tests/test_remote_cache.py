"""The Redis remote cache tier, against a real ``redis-server`` started by the tests: two machines
share results, a dead or hung server never fails a compile (one warning), and nothing corrupt or
made for another key is ever installed from it."""
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import time

import pytest

from helpers import FORBID_SEARCH, run_python
from torch_cudal1.cache import remote as remote_mod
from torch_cudal1.cache.key import cache_key
from torch_cudal1.cache.remote import BadBlob, RemoteTier, pack, unpack
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cache.tiered import TieredStore


# -- a real Redis server ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throw-away ``redis-server`` on a free port (no persistence)."""

    def __init__(self, workdir):
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                if self.client().ping():
                    break
            except Exception:  # noqa: BLE001 - not up yet
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)

    def client(self):
        import redis
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def require_redis():
    pytest.importorskip("redis", reason="the redis client is not installed (pip install redis)")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")


@pytest.fixture
def redis_server(tmp_path):
    require_redis()
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def cudal1_warnings():
    """Warnings of the torch_cudal1 logger (it does not propagate to the root logger)."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    handler = Keep(level=logging.WARNING)
    logger = logging.getLogger("torch_cudal1")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def _entry(store: CacheStore, graph: str, body: str = "x * 2") -> str:
    """Commit a small, real entry (fields hash to its key) and return its key."""
    fields = {"graph": graph, "inputs": [], "device": {"type": "cpu"}}
    key = cache_key(fields)
    staging = store.new_staging(key)
    (staging / "winner.py").write_text(f"def f(x):\n    return {body}\n")
    (staging / "artifacts").mkdir()
    (staging / "artifacts" / "lib.so").write_bytes(os.urandom(2048))
    store.commit(key, staging, {"fields": fields, "winner": {"origin": "test"}})
    return key


def _fresh_tier(url, timeout_s=5.0) -> RemoteTier:
    # A tier of its own (not the process-wide one), so that one test's disabling stays local.
    return RemoteTier(url, timeout_s)


# -- packing (no server needed) -------------------------------------------------------------------
def test_pack_is_deterministic_and_round_trips(tmp_path):
    store = CacheStore(tmp_path / "a")
    key = _entry(store, "g-pack")
    blob = pack(store.entry_path(key))
    time.sleep(1.1)
    os.utime(store.entry_path(key) / "winner.py")       # a newer mtime must not change the blob
    assert pack(store.entry_path(key)) == blob
    out = tmp_path / "out"
    out.mkdir()
    unpack(blob, out)
    assert store._read(key, out, True).meta["key"] == key     # the manifest still matches


@pytest.mark.parametrize("kind", ["traversal", "absolute", "symlink", "garbage"])
def test_unpack_refuses_unsafe_archives(tmp_path, kind):
    buf = io.BytesIO()
    if kind == "garbage":
        blob = b"\x1f\x8b not really gzip"
    else:
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo({"traversal": "../evil.py", "absolute": "/tmp/evil.py",
                                    "symlink": "winner.py"}[kind])
            if kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info.size = 4
                tar.addfile(info, io.BytesIO(b"boom"))
        blob = buf.getvalue()
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(BadBlob):
        unpack(blob, dest)
    assert not (tmp_path / "evil.py").exists() and not list(dest.iterdir())


# -- two machines, one Redis ----------------------------------------------------------------------
COMPILE = """
import json, sys, torch, torch.nn as nn
import torch_cudal1, torch_cudal1.counters as rt
__PATCH__
torch.manual_seed(0)
width = int(sys.argv[2]) if len(sys.argv) > 2 else 32
m = nn.Sequential(nn.Linear(16, width), nn.GELU(), nn.Linear(width, 4)).eval()
x = torch.randn(3, 16)
opts = {"baselines": "eager", "rounds": 0, "trials": 1}
opts.update(json.loads(sys.argv[1]))
c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    err = (c(x) - m(x)).abs().max().item()
print(json.dumps({"err": err, "stats": torch_cudal1.stats(), "keys": [k["key"] for k in rt.SEEN_KEYS]}))
"""

# The second machine must get its winner without any search, engine, verifier or build.
FORBID = FORBID_SEARCH


def _compile(cache_dir, url, patch="", timeout_s=5.0):
    code = COMPILE.replace("__PATCH__", patch)
    opts = json.dumps({"remote_cache": url, "remote_timeout_s": timeout_s})
    return run_python(f"import sys; sys.argv[1:] = [{opts!r}]\n" + code,
                      env={"CUDAL1_CACHE_DIR": str(cache_dir)})


def test_two_machines_share_results_through_redis(tmp_path, redis_server):
    first = _compile(tmp_path / "machine1", redis_server.url)
    assert first["err"] < 1e-5 and first["stats"].get("searches") == 1
    (key,) = first["keys"]
    # The first process's exit waited for its background upload: blob and index are there.
    index = json.loads(redis_server.client().get(remote_mod.index_name(key)))
    blob = redis_server.client().get(remote_mod.blob_name(index["blob"]))
    assert hashlib.sha256(blob).hexdigest() == index["blob"]

    second = _compile(tmp_path / "machine2", redis_server.url, patch=FORBID)
    assert second["err"] < 1e-5
    assert second["keys"] == [key]
    assert second["stats"].get("remote_hits") == 1 and second["stats"].get("cache_hits") == 1
    assert not second["stats"].get("searches") and not second["stats"].get("fallbacks")
    local = CacheStore(tmp_path / "machine2")
    assert local.keys() == [key] and local.load(key) is not None     # installed, and sound
    assert not list(local.tmp.iterdir())                             # no staging left behind


def test_redis_stopped_mid_run_leaves_correct_results_and_one_warning(tmp_path, redis_server):
    cache = tmp_path / "cache"
    # One process compiles three different graphs; Redis is killed after the first upload.
    script = f"""
import os, signal, json, torch, torch.nn as nn
import torch_cudal1
from torch_cudal1.cache import remote
# new_shapes=search: each width is searched (not served by the shape-generic implementation as
# another size of one graph), so that each one has an entry to upload.
opts = {{"baselines": "eager", "rounds": 0, "trials": 1, "remote_cache": {redis_server.url!r},
        "remote_timeout_s": 2.0, "new_shapes": "search"}}
errs = []
for i, width in enumerate((8, 12, 20)):
    torch.manual_seed(i)
    m = nn.Sequential(nn.Linear(16, width), nn.Tanh(), nn.Linear(width, 4)).eval()
    x = torch.randn(2, 16)
    with torch.no_grad():
        errs.append((torch.compile(m, backend="cudal1", options=opts)(x) - m(x)).abs().max().item())
    if i == 0:
        assert remote.flush_all(60)
        os.kill({redis_server.proc.pid}, signal.SIGKILL)
print(json.dumps({{"errs": errs, "stats": torch_cudal1.stats()}}))
"""
    out = run_python(script, env={"CUDAL1_CACHE_DIR": str(cache)})
    redis_server.proc.wait(10)
    assert max(out["errs"]) < 1e-5
    assert out["stats"].get("searches") == 3 and not out["stats"].get("fallbacks")
    # One line when the tier went off (never back: the server is dead), one at exit for the two
    # uploads that waited for it; the exit did not wait for a server that is off.
    assert out["_stderr"].count(" off: ") == 1, out["_stderr"]
    assert "exiting with 2 upload(s) not done" in out["_stderr"], out["_stderr"]
    store = CacheStore(cache)
    assert len(store.keys()) == 3
    assert all(store.load(k) is not None for k in store.keys())   # every local entry is sound
    assert not list(store.tmp.iterdir())


# -- what comes back from Redis is checked --------------------------------------------------------
def test_remote_entries_are_verified_before_install(tmp_path, redis_server, cudal1_warnings):
    tier = _fresh_tier(redis_server.url)
    a = TieredStore(tmp_path / "a", tier)
    b = TieredStore(tmp_path / "b", tier)
    good, flipped, tampered, misfiled = (_entry(a, f"g{i}") for i in range(4))
    assert tier.flush(30)
    r = redis_server.client()

    # 1. A sound entry is installed on the other machine and served.
    entry = b.load(good)
    assert entry is not None and entry.winner_source == a.load(good).winner_source

    # 2. A blob whose bytes changed in Redis: its sha256 no longer matches the index.
    digest = json.loads(r.get(remote_mod.index_name(flipped)))["blob"]
    raw = bytearray(r.get(remote_mod.blob_name(digest)))
    raw[len(raw) // 2] ^= 0xFF
    r.set(remote_mod.blob_name(digest), bytes(raw))

    # 3. A re-packed entry with changed code and a matching index hash: the manifest catches it.
    work = tmp_path / "tamper"
    shutil.copytree(a.entry_path(tampered), work)
    (work / "winner.py").write_text("import os\nos.system('echo pwned')\n")
    tier.put(tampered, pack(work))

    # 4. A sound entry filed under another key (made for another graph / device).
    digest = json.loads(r.get(remote_mod.index_name(good)))["blob"]
    r.set(remote_mod.index_name(misfiled), json.dumps({"blob": digest}))

    for key in (flipped, tampered, misfiled):
        assert b.load(key) is None
        assert not b.entry_path(key).exists()
    assert not list(b.tmp.iterdir())                      # rejected staging dirs are removed
    assert tier.enabled and tier.stats["rejected"] == 3
    assert sum("rejected" in w for w in cudal1_warnings) == 3

    # The same checks guard against a mis-filed entry whose fields were rewritten to match.
    work2 = tmp_path / "refield"
    shutil.copytree(a.entry_path(good), work2)
    meta = json.loads((work2 / "meta.json").read_text())
    meta["key"] = misfiled
    (work2 / "meta.json").write_text(json.dumps(meta))
    tier.put(misfiled, pack(work2))
    assert b.load(misfiled) is None and "do not hash to the key" in cudal1_warnings[-1]


def test_commit_does_not_wait_for_the_network(tmp_path, redis_server):
    tier = _fresh_tier(redis_server.url)
    store = TieredStore(tmp_path / "a", tier)
    os.kill(redis_server.proc.pid, signal.SIGSTOP)          # a hung server
    try:
        t0 = time.monotonic()
        key = _entry(store, "g-hung")
        assert time.monotonic() - t0 < 3.0                   # committed locally, upload queued
        assert store.load(key) is not None
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    assert tier.flush(30)
    assert redis_server.client().get(remote_mod.index_name(key)) is not None


def test_unreachable_or_hung_remote_trips_the_breaker_once(tmp_path, redis_server,
                                                          cudal1_warnings):
    # A port nobody listens on.
    dead = TieredStore(tmp_path / "a", _fresh_tier(f"redis://127.0.0.1:{_free_port()}/0", 1.0))
    assert dead.load("0" * 32) is None and dead.load("1" * 32) is None
    key = _entry(dead, "g-dead")                              # local commits still work
    assert dead.load(key) is not None
    assert not dead.remote.flush(10)          # at once: the upload waits for the server
    assert dead.remote.pending == 1
    assert sum(" off: " in w for w in cudal1_warnings) == 1

    # A server that accepts but never answers: bounded by remote_timeout_s, then off.
    hung = TieredStore(tmp_path / "b", _fresh_tier(redis_server.url, 0.5))
    os.kill(redis_server.proc.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        assert hung.load("2" * 32) is None
        assert hung.load("3" * 32) is None
        assert time.monotonic() - t0 < 3.0      # one timeout, no client-side retries
        assert not hung.remote.enabled
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    assert sum(" off: " in w for w in cudal1_warnings) == 2   # one per tier


def test_the_tier_heals_when_a_stalled_server_answers_again(tmp_path, redis_server,
                                                            cudal1_warnings):
    """A real redis-server SIGSTOPped (a stall), then SIGCONTed: the breaker opens on the first
    timeout, lookups miss at once while it is open, uploads wait, and within 30 s of the server
    answering the tier is back: the waiting upload goes out and remote entries are served."""
    tier = _fresh_tier(redis_server.url, 1.0)
    a = TieredStore(tmp_path / "a", tier)
    b = TieredStore(tmp_path / "b", tier)
    before = _entry(a, "g-before")
    assert tier.flush(30)
    os.kill(redis_server.proc.pid, signal.SIGSTOP)
    try:
        assert b.load(before) is None                        # the stall trips the breaker
        assert tier.breaker.is_open and not tier.enabled
        t0 = time.monotonic()
        assert b.load(before) is None                        # open: no network, no wait
        assert time.monotonic() - t0 < 0.5
        during = _entry(a, "g-during")                       # committed locally, upload waits
        assert not tier.flush(5) and tier.pending == 1
        time.sleep(3.0)                                      # a few failed probes
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    t0 = time.monotonic()
    while not tier.enabled and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    assert tier.enabled, f"the tier did not come back within 30 s: {cudal1_warnings}"
    assert tier.flush(30)
    r = redis_server.client()
    assert r.get(remote_mod.index_name(during)) is not None   # the upload that waited went out
    assert b.load(before) is not None and b.load(during) is not None   # served from Redis again
    assert tier.breaker.opened == 1 and tier.breaker.closed_count == 1
    off = [w for w in cudal1_warnings if " off: " in w]
    back = [w for w in cudal1_warnings if " back after " in w]
    assert len(off) == 1 and len(back) == 1, cudal1_warnings
    assert "Timeout" in off[0] and redis_server.url.split("//")[1].split("/")[0] in back[0]


def test_store_for_uses_the_tier_only_when_configured(tmp_path):
    from torch_cudal1.options import Options
    from torch_cudal1.cache import store_for
    plain = store_for(Options.resolve({"cache_dir": str(tmp_path)}, env={}))
    assert type(plain) is CacheStore
    url = f"redis://127.0.0.1:{_free_port()}/5"
    tiered = store_for(Options.resolve({"cache_dir": str(tmp_path), "remote_cache": url,
                                        "remote_timeout_s": 0.5}, env={}))
    assert isinstance(tiered, TieredStore) and tiered.root == plain.root
    assert tiered.remote is store_for(Options.resolve({"cache_dir": str(tmp_path),
                                                       "remote_cache": url}, env={})).remote


def test_remote_secret_rejects_entries_not_signed_with_it(tmp_path, redis_server, cudal1_warnings):
    signed = TieredStore(tmp_path / "a", RemoteTier(redis_server.url, 5.0, secret="s3cret"))
    unsigned = TieredStore(tmp_path / "b", _fresh_tier(redis_server.url))
    good = _entry(signed, "g-signed")
    forged = _entry(unsigned, "g-forged")          # self-consistent, but written without the key
    assert signed.remote.flush(30) and unsigned.remote.flush(30)

    reader = TieredStore(tmp_path / "c", RemoteTier(redis_server.url, 5.0, secret="s3cret"))
    assert reader.load(good) is not None
    assert reader.load(forged) is None and not reader.entry_path(forged).exists()
    other = TieredStore(tmp_path / "d", RemoteTier(redis_server.url, 5.0, secret="another"))
    assert other.load(good) is None
    # The signature binds the blob to its key: a signed index copied to another key fails too.
    r = redis_server.client()
    r.set(remote_mod.index_name(forged), r.get(remote_mod.index_name(good)))
    assert TieredStore(tmp_path / "e", reader.remote).load(forged) is None
    assert sum("not signed with this remote_secret" in w for w in cudal1_warnings) == 3


def test_missing_redis_client_disables_the_tier_with_a_clear_message(tmp_path, monkeypatch,
                                                                    cudal1_warnings):
    import builtins
    real_import = builtins.__import__

    def no_redis(name, *a, **k):
        if name == "redis" or name.startswith("redis."):
            raise ImportError("No module named 'redis'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_redis)
    store = TieredStore(tmp_path, _fresh_tier("redis://127.0.0.1:1/0"))
    assert store.load("0" * 32) is None
    key = _entry(store, "g-noredis")                  # local commits are unaffected
    assert store.load(key) is not None and not store.remote.enabled
    assert len(cudal1_warnings) == 1 and "pip install" in cudal1_warnings[0]


def test_a_bad_url_disables_the_tier_not_the_compile(tmp_path, cudal1_warnings):
    pytest.importorskip("redis")
    store = TieredStore(tmp_path, _fresh_tier("http://not-redis:80/"))
    assert store.load("0" * 32) is None and not store.remote.enabled
    assert len(cudal1_warnings) == 1 and "invalid URL" in cudal1_warnings[0]


def test_a_rejected_remote_entry_is_fetched_and_warned_about_once(tmp_path, redis_server,
                                                                  cudal1_warnings):
    tier = _fresh_tier(redis_server.url)
    key = _entry(TieredStore(tmp_path / "a", tier), "g-once")
    assert tier.flush(30)
    r = redis_server.client()
    digest = json.loads(r.get(remote_mod.index_name(key)))["blob"]
    raw = bytearray(r.get(remote_mod.blob_name(digest)))
    raw[len(raw) // 2] ^= 0xFF
    r.set(remote_mod.blob_name(digest), bytes(raw))

    def gets() -> int:
        return int(r.info("commandstats").get("cmdstat_get", {}).get("calls", 0))
    before = gets()
    b = TieredStore(tmp_path / "b", tier)
    for _ in range(3):             # a runner's lookup, its search's second lookup, a later one
        assert b.load(key) is None
    # three index reads, one blob read; one warning
    assert gets() - before == 4
    assert tier.stats["rejected"] == 1
    assert sum(key in w and "rejected" in w for w in cudal1_warnings) == 1, cudal1_warnings
