"""``cudal1 cache ...``: listing, showing, removing, pruning, verifying, bundles, explaining."""
import json
import os
import time

import torch

from test_cache_store import TASK, WINNER, make_entry
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cli import main


def _cli(capsys, cache, *argv):
    rc = main(["cache", "--cache-dir", str(cache), *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_ls_show_rm_and_usage_errors(tmp_path, capsys):
    store = CacheStore(tmp_path)
    a = make_entry(store, graph="a" * 64)
    b = make_entry(store, graph="b" * 64)
    rc, out, _ = _cli(capsys, tmp_path, "ls", "--json")
    rows = json.loads(out)
    assert rc == 0 and sorted(r["key"] for r in rows) == sorted([a.key, b.key])
    assert all(r["fits_here"] and r["winner"] == "test" and r["size"] > 0 for r in rows)
    rc, out, _ = _cli(capsys, tmp_path, "show", a.key[:8], "--json")
    shown = json.loads(out)
    assert rc == 0 and shown["key"] == a.key and shown["status"] == "ok" and shown["trusted"]
    rc, out, _ = _cli(capsys, tmp_path, "show", a.key)
    assert rc == 0 and "relu2" in out and "winner" in out
    assert "served     the winner (no arbiter decision kept)" in out
    # what a serving process will run for it: the arbiter's kept decision, with what it measured
    from torch_cudal1.cache.decisions import write_decision
    write_decision(store, a.key, {"choice": "inductor+cudagraph", "ms": {"winner": 0.43, "inductor": 0.3,
                                                                        "inductor+cudagraph": 0.19}})
    rc, out, _ = _cli(capsys, tmp_path, "show", a.key)
    assert "served     inductor+cudagraph" in out and "inductor+cudagraph 0.19" in out
    shown = json.loads(_cli(capsys, tmp_path, "show", a.key, "--json")[1])
    assert shown["serve"]["choice"] == "inductor+cudagraph"
    assert _cli(capsys, tmp_path, "show", "nope")[0] == 2
    assert _cli(capsys, tmp_path, "rm", "nope")[0] == 2
    rc, out, _ = _cli(capsys, tmp_path, "rm", a.key)
    assert rc == 0 and store.keys() == [b.key]
    assert _cli(capsys, tmp_path, "prune", "--older-than", "soon")[0] == 2
    assert _cli(capsys, tmp_path, "export", str(tmp_path / "x.tgz"), "nope")[0] == 2


def test_prune_by_age_and_size(tmp_path, capsys):
    store = CacheStore(tmp_path)
    old, mid, new = (make_entry(store, graph=c * 64) for c in "omn")
    now = time.time()
    for e, age in ((old, 40 * 86400), (mid, 2 * 86400), (new, 0)):
        store.touch(e.key)
        os.utime(store.usage / e.key, (now - age, now - age))
    store.tmp.mkdir(exist_ok=True)
    (store.tmp / f"{new.key}.999999.deadbeef@{os.uname().nodename}").mkdir()   # dead writer
    rc, out, _ = _cli(capsys, tmp_path, "prune", "--older-than", "30d", "--dry-run", "--json")
    assert rc == 0 and json.loads(out)["removed"] == [old.key] and store.load(old.key)
    rc, out, _ = _cli(capsys, tmp_path, "prune", "--older-than", "30d", "--json")
    report = json.loads(out)
    assert report["removed"] == [old.key] and len(report["stale_staging"]) == 1
    assert sorted(store.keys()) == sorted([mid.key, new.key])
    rc, out, _ = _cli(capsys, tmp_path, "prune", "--max-size", str(store.size(new.key) + 10), "--json")
    assert json.loads(out)["removed"] == [mid.key] and store.keys() == [new.key]   # LRU first


def test_verify_reruns_winner_and_vectors(tmp_path, capsys):
    from safetensors.torch import save_file
    store = CacheStore(tmp_path)
    good = make_entry(store, graph="a" * 64)
    # An entry whose stored vectors disagree with its (correct) winner: e.g. written by a
    # machine whose kernels computed something else. Hashes are consistent; verify must fail it.
    x = torch.randn(4, 8)
    staging = store.new_staging("b" * 32)
    (staging / "task.py").write_text(TASK)
    (staging / "winner.py").write_text(WINNER)
    save_file({"input.0": x, "output.0": torch.relu(x) * 3}, str(staging / "vectors.safetensors"))
    fields = json.loads(json.dumps(good.meta["fields"]))
    fields["graph"] = "b" * 64
    from torch_cudal1.cache.key import cache_key
    bad = store.commit(cache_key(fields), staging, {"fields": fields, "winner": {"origin": "test"}})
    rc, out, _ = _cli(capsys, tmp_path, "verify", "--device", "cpu", "--trials", "1", "--json")
    res = {r["key"]: r for r in json.loads(out)["results"]}
    assert rc == 1
    assert res[good.key]["status"] == "ok" and res[good.key]["vectors"]["status"] == "ok"
    assert res[bad.key]["status"] == "failed" and res[bad.key]["vectors"]["status"] == "mismatch"
    assert res[bad.key]["verdict"]["accepted"]


def test_export_import_reports_fit(tmp_path, capsys):
    src = CacheStore(tmp_path / "a")
    here = make_entry(src, graph="a" * 64)
    fields = json.loads(json.dumps(here.meta["fields"]))
    fields["device"] = {"type": "cuda", "name": "NVIDIA H200", "capability": "9.0", "sm_count": 132}
    there = make_entry(src, fields=fields)
    bundle = tmp_path / "b.tar.gz"
    rc, out, _ = _cli(capsys, tmp_path / "a", "export", str(bundle))
    assert rc == 0 and bundle.exists()
    rc, out, _ = _cli(capsys, tmp_path / "b", "import", str(bundle), "--device", "cpu", "--json")
    rep = {e["key"]: e for e in json.loads(out)["entries"]}
    assert rc == 0 and {e["status"] for e in rep.values()} == {"imported"}
    assert rep[here.key]["fits_here"] and not rep[there.key]["fits_here"]
    assert "device.name" in rep[there.key]["fit_detail"] and "H200" in rep[there.key]["fit_detail"]
    (tmp_path / "junk.tar.gz").write_bytes(b"not a bundle")
    assert _cli(capsys, tmp_path / "b", "import", str(tmp_path / "junk.tar.gz"))[0] == 2


def test_explain_task_file_names_the_differing_field(tmp_path, capsys):
    from torch_cudal1.cache.key import task_key
    from torch_cudal1.task import Task
    task_file = tmp_path / "relu2.py"
    task_file.write_text(TASK)
    key, fields = task_key(Task.from_file(task_file), "cpu")
    other = json.loads(json.dumps(fields))
    other["flags"]["float32_matmul_precision"] = "high"
    other["versions"]["torch"] = "2.0.0"
    store = CacheStore(tmp_path / "c")
    make_entry(store, fields=other)
    rc, out, _ = _cli(capsys, tmp_path / "c", "explain", str(task_file), "--device", "cpu", "--json")
    recs = json.loads(out)
    assert rc == 0
    src = next(r for r in recs if r["key"] == key)
    assert not src["hit"] and len(src["near"]) == 1
    paths = [d[0] for d in src["near"][0]["diff"]]
    assert paths == ["flags.float32_matmul_precision", "versions.torch"]
    graphs = [r for r in recs if r["key"] != key]          # what torch.compile(Model) asks for
    assert graphs and all(not r["hit"] and r["detail"] == "miss: no entry for this graph" for r in graphs)


def test_ls_and_show_agree_on_a_tampered_entry(tmp_path, capsys):
    store = CacheStore(tmp_path)
    good = make_entry(store, graph="a" * 64)
    bad = make_entry(store, graph="b" * 64)
    (bad.path / "winner.py").write_text("import os\n")            # tampered after commit
    rc, out, _ = _cli(capsys, tmp_path, "ls", "--json")
    rows = {r["key"]: r for r in json.loads(out)}
    assert rc == 0 and rows[good.key]["status"] == "ok"
    assert rows[bad.key]["status"].startswith("tampered: content hash mismatch (winner.py)")
    rc, out, _ = _cli(capsys, tmp_path, "ls")
    assert "tampered (quarantined when loaded)" in out and f"{bad.key}: tampered" in out
    assert store.entry_path(bad.key).is_dir()                   # listing moves nothing
    rc, out, _ = _cli(capsys, tmp_path, "show", bad.key, "--json")
    assert rc == 1 and json.loads(out)["status"] == "corrupt (quarantined)"
    assert [r["key"] for r in json.loads(_cli(capsys, tmp_path, "ls", "--json")[1])] == [good.key]


def test_prune_dry_run_lists_what_a_real_prune_removes(tmp_path, capsys):
    store = CacheStore(tmp_path)
    make_entry(store, graph="a" * 64)
    dead = store.tmp / f"{'c' * 32}.999999.deadbeef@{os.uname().nodename}"
    dead.mkdir(parents=True)
    store.quarantine_dir.mkdir()
    (store.quarantine_dir / "old-entry").mkdir()
    rc, out, _ = _cli(capsys, tmp_path, "prune", "--dry-run", "--json")
    dry = json.loads(out)
    assert rc == 0 and dry["stale_staging"] == [dead.name] and dry["quarantine"] == ["old-entry"]
    assert dead.exists() and (store.quarantine_dir / "old-entry").exists()
    rc, out, _ = _cli(capsys, tmp_path, "prune", "--dry-run")
    assert f"staging     {dead.name}" in out and "would remove 0 entries, 1 stale staging" in out
    real = json.loads(_cli(capsys, tmp_path, "prune", "--json")[1])
    assert {k: v for k, v in real.items() if k != "dry_run"} == \
        {k: v for k, v in dry.items() if k != "dry_run"}
    assert not dead.exists()


def test_a_rejected_import_does_not_claim_to_fit(tmp_path, capsys):
    import tarfile
    src = CacheStore(tmp_path / "a")
    entry = make_entry(src, graph="a" * 64)
    bundle = tmp_path / "b.tgz"
    assert _cli(capsys, tmp_path / "a", "export", str(bundle))[0] == 0
    # The entry's code changed inside the bundle, its hashes not: the import rejects it.
    work = tmp_path / "w"
    with tarfile.open(bundle) as tar:
        tar.extractall(work, filter="data")
    (work / "entries" / entry.key / "winner.py").write_text("import os\n")
    with tarfile.open(bundle, "w:gz") as tar:
        for p in sorted(work.rglob("*")):
            if p.is_file():
                tar.add(p, arcname=p.relative_to(work).as_posix())
    rc, out, _ = _cli(capsys, tmp_path / "b", "import", str(bundle), "--device", "cpu")
    assert rc == 1 and "rejected" in out and "fits this machine" not in out
    assert "not imported" in out and "0 fit this machine" in out


def test_explain_never_pulls_remote_entries(tmp_path, capsys, monkeypatch):
    from test_remote_cache import RedisServer, require_redis
    from torch_cudal1.cache.remote import RemoteTier
    from torch_cudal1.cache.tiered import TieredStore
    from torch_cudal1.cache.key import task_key
    from torch_cudal1.task import Task
    require_redis()
    server = RedisServer(tmp_path)
    try:
        task_file = tmp_path / "relu2.py"
        task_file.write_text(TASK)
        key, fields = task_key(Task.from_file(task_file), "cpu")
        producer = TieredStore(tmp_path / "producer", RemoteTier(server.url))
        make_entry(producer, fields=fields)
        assert producer.remote.flush(30)
        monkeypatch.setenv("CUDAL1_REMOTE_CACHE", server.url)
        rc, out, _ = _cli(capsys, tmp_path / "empty", "explain", str(task_file), "--device", "cpu",
                          "--json")
        recs = {r["key"]: r for r in json.loads(out)}
        assert rc == 0 and not recs[key]["hit"] and recs[key]["remote"] is True
        assert "the remote tier has it" in recs[key]["detail"]
        assert CacheStore(tmp_path / "empty").keys() == []          # nothing pulled in
        assert all(r["remote"] is False for k, r in recs.items() if k != key)
    finally:
        server.stop()
