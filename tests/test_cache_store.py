"""The cache store under real processes: locks of killed holders, writers killed mid-commit,
stale staging dirs, integrity checks, trust, and export/import bundles."""
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

from helpers import RELU_TASK
from torch_cudal1.cache.explain import diff_fields, fit, miss_reason
from torch_cudal1.cache.key import cache_key, input_metadata, key_fields
from torch_cudal1.cache.store import CacheStore

ROOT = Path(__file__).resolve().parents[1]

TASK = RELU_TASK
WINNER = """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0) * 2
"""


def make_entry(store: CacheStore, graph="g" * 64, shape=(4, 8), winner=WINNER, device="cpu",
               vectors=True, fields=None):
    """A real entry (task, winner, test vectors) written the way the search writes one."""
    from safetensors.torch import save_file
    x = torch.randn(*shape)
    fields = fields or key_fields(graph, input_metadata([x]), device)
    key = cache_key(fields)
    staging = store.new_staging(key)
    (staging / "task.py").write_text(TASK)
    (staging / "winner.py").write_text(winner)
    if vectors:
        save_file({"input.0": x, "output.0": torch.relu(x) * 2}, str(staging / "vectors.safetensors"))
    meta = {"fields": fields, "environment": {}, "task_name": "relu2",
            "winner": {"origin": "test", "speedup_vs_eager": 1.5}, "summary": {}, "attempts": []}
    return store.commit(key, staging, meta)


def _py(code: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for(path: Path, timeout=60.0):
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def test_killed_lock_holder_never_blocks(tmp_path):
    marker = tmp_path / "locked"
    holder = _py(f"""
import time, pathlib
from torch_cudal1.cache.store import CacheStore
lock = CacheStore({str(tmp_path)!r}).lock("k" * 32)
lock.acquire()
pathlib.Path({str(marker)!r}).touch()
time.sleep(600)
""")
    try:
        _wait_for(marker)
        store = CacheStore(tmp_path)
        from filelock import Timeout
        with pytest.raises(Timeout):
            store.lock("k" * 32, timeout=0.5).acquire()       # held by a live process
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        t0 = time.monotonic()
        with store.lock("k" * 32, timeout=10):                  # the OS dropped it with the holder
            assert time.monotonic() - t0 < 5
    finally:
        if holder.poll() is None:
            holder.kill()


def test_writers_killed_mid_commit_leave_no_corrupt_entry(tmp_path):
    """kill -9 writers at arbitrary moments: every entry directory is whole (hash-checked) and
    the dead writers' staging dirs are cleaned up later."""
    ready = tmp_path / "ready"
    code = f"""
import os, pathlib, torch
from torch_cudal1.cache.store import CacheStore
import test_cache_store as t
store = CacheStore({str(tmp_path / "c")!r})
i = 0
while True:
    i += 1
    t.make_entry(store, graph=f"{{os.getpid()}}-{{i}}", shape=(64, 512))
    pathlib.Path({str(ready)!r}).touch()
"""
    here = str(Path(__file__).parent)
    for delay in (0.05, 0.13, 0.31):
        ready.unlink(missing_ok=True)
        p = subprocess.Popen([sys.executable, "-c", code], cwd=here,
                             env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{here}"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for(ready, timeout=120)
            time.sleep(delay)
        finally:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)
    store = CacheStore(tmp_path / "c")
    keys = store.keys()
    assert keys, "the writers committed nothing"
    for k in keys:
        assert store.load(k) is not None, f"entry {k} is not whole"
    assert not any(store.quarantine_dir.glob("*")) if store.quarantine_dir.exists() else True
    leftovers = list(store.tmp.iterdir()) if store.tmp.exists() else []
    live = store.new_staging("live")     # cleans stale dirs first; ours is alive and stays
    store.clean_stale()
    assert not any(p.exists() for p in leftovers)
    assert live.exists() and set(store.tmp.iterdir()) == {live}


def test_corrupt_or_truncated_entries_are_quarantined(tmp_path):
    store = CacheStore(tmp_path)
    a = make_entry(store, graph="a" * 64)
    b = make_entry(store, graph="b" * 64)
    c = make_entry(store, graph="c" * 64)
    (a.path / "winner.py").write_text(WINNER + "\nimport os\n")          # tampered code
    vec = b.path / "vectors.safetensors"
    vec.write_bytes(vec.read_bytes()[:-7])                               # truncated file
    (c.path / "meta.json").write_text("{")                               # torn metadata
    for e in (a, b, c):
        assert store.load(e.key) is None
        assert not store.entry_path(e.key).exists()
    why = sorted((d / "QUARANTINED").read_text() for d in store.quarantine_dir.iterdir())
    assert len(why) == 3 and any("winner.py" in w for w in why) and any("vectors" in w for w in why)


def test_extra_file_in_entry_is_corruption(tmp_path):
    store = CacheStore(tmp_path)
    e = make_entry(store)
    (e.path / "sitecustomize.py").write_text("print('planted')")
    assert store.load(e.key) is None


def test_trust_requires_ownership_and_no_world_write(tmp_path):
    store = CacheStore(tmp_path / "c")
    e = make_entry(store)
    assert store.trust_problem(e.path) is None
    os.chmod(store.root, 0o777)
    assert "writable by every user" in store.trust_problem(e.path)
    os.chmod(store.root, 0o755)
    if os.getuid() == 0:
        os.chown(e.path, 65534, 65534)
        assert "owned by uid 65534" in store.trust_problem(e.path)


def test_miss_reason_names_the_differing_fields(tmp_path):
    store = CacheStore(tmp_path)
    x = torch.randn(4, 8)
    here = key_fields("g" * 64, input_metadata([x]), "cpu")
    other = json.loads(json.dumps(here))
    other["device"] = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0",
                       "sm_count": 132}
    make_entry(store, fields=other)
    reason = miss_reason(store, here)
    assert "device.name" in reason and "H100" in reason and "device.type" in reason
    assert miss_reason(store, key_fields("z" * 64, [], "cpu")) == "no entry for this graph"
    assert [p for p, _, _ in fit(here, other)] == ["device.capability", "device.name",
                                                   "device.sm_count", "device.type"]
    assert diff_fields({"a": [1, 2]}, {"a": [1, 3]}) == [("a[1]", 2, 3)]


def test_bundle_roundtrip_and_tampering(tmp_path):
    from torch_cudal1.cache.bundle import export_bundle, import_bundle
    src = CacheStore(tmp_path / "src")
    e1 = make_entry(src, graph="a" * 64)
    e2 = make_entry(src, graph="b" * 64)
    bundle = tmp_path / "b.tar.gz"
    export_bundle(src, [e1.key, e2.key], bundle, {"host": "test"})
    dst = CacheStore(tmp_path / "dst")
    reports = import_bundle(dst, bundle)
    assert sorted(r["status"] for r in reports) == ["imported", "imported"]
    assert dst.load(e1.key).meta["imported"]["hashes_checked"]
    assert dst.load(e1.key).winner_source == WINNER
    assert {r["status"] for r in import_bundle(dst, bundle)} == {"exists"}

    # A bundle whose winner was swapped after export (manifests untouched) is rejected.
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bundle) as tin, tarfile.open(bad, "w:gz") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read()
            if m.name == f"entries/{e2.key}/winner.py":
                data = data + b"\nimport os; os.system('true')\n"
                m.size = len(data)
            import io
            tout.addfile(m, io.BytesIO(data))
    third = CacheStore(tmp_path / "third")
    by_key = {r["key"]: r for r in import_bundle(third, bad)}
    assert by_key[e2.key]["status"] == "rejected" and "hash" in by_key[e2.key]["detail"]
    assert by_key[e1.key]["status"] == "imported"
    assert third.load(e2.key) is None and not third.entry_path(e2.key).exists()


def test_bundles_carry_the_arbiters_kept_decisions(tmp_path):
    """Cache-only serving follows a kept decision without timing: a shipped cache brings the
    decisions made where it was warmed; one measured on the importing machine stays; a decision
    naming anything outside the known implementations is dropped."""
    import json as _json

    from torch_cudal1.cache.bundle import export_bundle, import_bundle
    from torch_cudal1.cache.decisions import read_decision, write_decision
    src = CacheStore(tmp_path / "src")
    e1, e2, e3 = (make_entry(src, graph=c * 64) for c in "abc")
    write_decision(src, e1.key, {"choice": "inductor+cudagraph", "considered": ["eager", "inductor"]})
    write_decision(src, e2.key, {"choice": "inductor"})
    bundle = tmp_path / "b.tar.gz"
    export_bundle(src, [e1.key, e2.key, e3.key], bundle, {"host": "test"})
    dst = CacheStore(tmp_path / "dst")
    write_decision(dst, e2.key, {"choice": "eager"})   # measured here before the import
    reports = {r["key"]: r for r in import_bundle(dst, bundle)}
    assert read_decision(dst, e1.key)["choice"] == "inductor+cudagraph"
    assert reports[e1.key]["decision"] == "inductor+cudagraph"
    assert read_decision(dst, e2.key)["choice"] == "eager"
    assert read_decision(dst, e3.key) is None and "decision" not in reports[e3.key]
    # a tampered or foreign decision is not followed
    (dst.root / "serve" / f"{e1.key}.json").write_text(_json.dumps({"choice": "os.system"}))
    assert read_decision(dst, e1.key) is None
