"""Entries from another machine are checked before their first use: a self-consistent forged
entry (its hashes recomputed) from a real Redis without ``remote_secret``, or from a bundle, is
refused with one clear line and never served; a genuine one is checked once and served."""
import json
import shutil
import tarfile

import pytest
import torch

from helpers import run_python
from test_cache_store import make_entry
from test_remote_cache import COMPILE, redis_server, require_redis  # noqa: F401 - fixture
from torch_cudal1.cache import foreign
from torch_cudal1.cache import remote as remote_mod
from torch_cudal1.cache.remote import RemoteTier, pack, unpack
from torch_cudal1.cache.store import META, CacheStore, manifest

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

# Appended to a winner: every output doubled. A forger's edit that the hashes cannot see once
# the manifest is recomputed.
DOUBLED = """

_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, *args):
        out = super().forward(*args)
        return tuple(o * 2 for o in out) if isinstance(out, (tuple, list)) else out * 2
"""


def _reseal(directory, *, vectors_doubled=False):
    """Make ``directory`` a self-consistent entry again after an edit: manifest recomputed."""
    if vectors_doubled:
        from safetensors.torch import load_file, save_file
        vec = load_file(str(directory / "vectors.safetensors"))
        save_file({k: (v * 2 if k.startswith("output.") else v) for k, v in vec.items()},
                  str(directory / "vectors.safetensors"))
    meta = json.loads((directory / META).read_text())
    meta["manifest"] = manifest(directory)
    (directory / META).write_text(json.dumps(meta))
    return meta


def _compile(cache_dir, opts: dict):
    code = COMPILE.replace("__PATCH__", "")
    return run_python(f"import sys; sys.argv[1:] = [{json.dumps(opts)!r}]\n" + code,
                      env={"CUDAL1_CACHE_DIR": str(cache_dir)})


def _lines(stderr: str, what: str) -> list:
    return [ln for ln in stderr.splitlines() if what in ln]


def test_forged_remote_entry_is_refused_and_a_genuine_one_checked_once(tmp_path, redis_server):
    url = redis_server.url
    first = _compile(tmp_path / "m1", {"remote_cache": url})
    (key,) = first["keys"]
    r = redis_server.client()
    genuine = r.get(remote_mod.blob_name(json.loads(r.get(remote_mod.index_name(key)))["blob"]))

    # Forge: the same entry with a winner that doubles its outputs, manifest recomputed, put
    # under the key with a valid index (no remote_secret: anyone who can write to Redis can).
    work = tmp_path / "forge"
    work.mkdir()
    unpack(genuine, work)
    with open(work / "winner.py", "a") as f:
        f.write(DOUBLED)
    _reseal(work)
    tier = RemoteTier(url)
    assert tier.put(key, pack(work))

    second = _compile(tmp_path / "m2", {"remote_cache": url})
    assert second["err"] < 1e-5                           # the forged winner never ran here
    s = second["stats"]
    assert s.get("foreign_refused") == 1 and s.get("searches") == 1 and not s.get("fallbacks")
    refused = _lines(second["_stderr"], "refused")
    assert len(refused) == 1, second["_stderr"]           # fetched and warned about once
    assert key in refused[0] and "from remote redis://" in refused[0]
    assert "outputs on its test vectors are wrong" in refused[0]
    assert not _lines(second["_stderr"], "remote cache hit")
    store2 = CacheStore(tmp_path / "m2")
    assert any(d.name.startswith(key) for d in store2.quarantine_dir.iterdir())
    # The search's own (sound) entry replaced the forged one, locally and in Redis.
    assert store2.load(key).foreign is None

    # A genuine entry from Redis: checked once against this graph's answers, then served.
    assert tier.put(key, genuine)
    third = _compile(tmp_path / "m3", {"remote_cache": url})
    s = third["stats"]
    assert third["err"] < 1e-5
    assert s.get("remote_hits") == 1 and s.get("foreign_checked") == 1 and not s.get("searches")
    assert len(_lines(third["_stderr"], f"remote cache hit {key} from redis://")) == 1, \
        third["_stderr"]
    store3 = CacheStore(tmp_path / "m3")
    entry = store3.load(key)
    assert entry.foreign["via"] == "remote" and foreign.is_checked(store3, entry)
    assert not foreign.needs_check(store3, entry)        # the next process serves it at once


def _rewrite(src, dst, edit):
    """Bundle ``dst``: bundle ``src`` with ``edit(entry_dir)`` applied to every entry, every hash
    (entry manifest, meta.json's hash in the bundle manifest) recomputed to match."""
    import hashlib
    work = dst.parent / (dst.name + ".work")
    with tarfile.open(src, "r:gz") as tar:
        tar.extractall(work, filter="data")
    info = json.loads((work / "bundle.json").read_text())
    for key in info["entries"]:
        entry = work / "entries" / key
        edit(entry)
        meta = _reseal(entry)
        info["entries"][key]["manifest"] = meta["manifest"]
        info["entries"][key]["meta_sha256"] = hashlib.sha256((entry / META).read_bytes()).hexdigest()
    (work / "bundle.json").write_text(json.dumps(info))
    with tarfile.open(dst, "w:gz") as tar:
        for p in sorted(work.rglob("*")):
            if p.is_file():
                tar.add(p, arcname=p.relative_to(work).as_posix())
    shutil.rmtree(work)


def _doubled(entry):
    """Winner and stored test outputs doubled."""
    with open(entry / "winner.py", "a") as f:
        f.write(DOUBLED)
    _reseal(entry, vectors_doubled=True)


def serve_forged(tmp_path, capsys, edit):
    """A graph searched on one machine, its bundle exported, rewritten by ``edit``, imported
    into another cache and served there in cache-only mode: (key, genuine bundle, forged
    bundle, what the serving process printed)."""
    from torch_cudal1.cli import main
    first = _compile(tmp_path / "m1", {})
    (key,) = first["keys"]
    good, forged = tmp_path / "good.tgz", tmp_path / "forged.tgz"
    assert main(["cache", "export", str(good), "--cache-dir", str(tmp_path / "m1")]) == 0
    _rewrite(good, forged, edit)
    # Its hashes agree with each other: the import cannot tell.
    assert main(["cache", "import", str(forged), "--device", "cpu",
                 "--cache-dir", str(tmp_path / "m2")]) == 0
    capsys.readouterr()
    return key, good, forged, _compile(tmp_path / "m2", {"mode": "cache-only"})


def test_forged_bundle_entry_is_imported_but_refused_on_first_use(tmp_path, capsys):
    key, _, forged, served = serve_forged(tmp_path, capsys, _doubled)
    assert served["err"] < 1e-5                              # the fallback, not the forged winner
    s = served["stats"]
    assert s.get("foreign_refused") == 1 and not s.get("cache_hits")
    (line,) = _lines(served["_stderr"], "refused")
    assert f"from bundle {forged}" in line
    assert "stored test outputs are not what this graph computes" in line
    assert CacheStore(tmp_path / "m2").load(key) is None     # quarantined


def test_an_entry_without_vectors_is_checked_on_the_callers_inputs(tmp_path):
    # The check needs no stored vectors when the caller has its own reference and inputs.
    store = CacheStore(tmp_path)
    entry = make_entry(store, vectors=False)
    meta = dict(entry.meta, imported={"from": "bundle.tgz", "via": "bundle"})
    (entry.path / META).write_text(json.dumps(meta))
    entry = store.load(entry.key)
    assert foreign.needs_check(store, entry)
    x = torch.randn(4, 8)
    ok, why = foreign.check(store, entry, "cpu", reference=lambda t: torch.relu(t) * 2, inputs=[x])
    assert ok and foreign.is_checked(store, entry), why
    # No reference and no vectors: nothing to check it against, so it is not served.
    other = make_entry(store, graph="h" * 64, vectors=False)
    (other.path / META).write_text(json.dumps(dict(other.meta, imported={"via": "bundle"})))
    ok, why = foreign.check(store, store.load(other.key), "cpu")
    assert not ok and "no test vectors" in why and store.load(other.key) is None
