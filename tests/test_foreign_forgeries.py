"""Forged entries from another machine, each with every hash recomputed so that the import
cannot tell: a bundle whose links write outside the cache, a winner labelled as a baseline that
is right only on its own stored input, test vectors that are not inputs of the key (an empty
batch, a huge one), inductor artefacts (pickles) from an unsigned producer, and `cudal1 cache
verify` against a task.py that came with the entry. Genuine entries keep working."""
import io
import json
import tarfile

import pytest
import torch

from test_cache_store import WINNER, make_entry
from test_foreign_entries import _compile, _lines, _reseal, serve_forged
from torch_cudal1.cache import archive, foreign
from torch_cudal1.cache.bundle import BundleError, export_bundle, import_bundle
from torch_cudal1.cache.store import META, CacheStore
from torch_cudal1.cache.vectors import VectorsUnfit, stored_vectors
from torch_cudal1.serve import audit

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent


def _meta_edit(entry, **winner):
    meta = json.loads((entry / META).read_text())
    meta["winner"].update(winner)
    (entry / META).write_text(json.dumps(meta))


# -- extraction ---------------------------------------------------------------------------------
def _tar(path, members):
    """A tar.gz of ``members``: (name, bytes) files, or (name, tar type, linkname) links."""
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            ti = tarfile.TarInfo(m[0])
            if len(m) == 2:
                ti.size = len(m[1])
                tar.addfile(ti, io.BytesIO(m[1]))
            else:
                ti.type, ti.linkname = m[1], m[2]
                tar.addfile(ti)


@pytest.mark.parametrize("bad", [("e/link", tarfile.SYMTYPE, "../../outside"),
                                 ("e/hard", tarfile.LNKTYPE, "e/a"),
                                 ("/abs", b"x"), ("e/../../up", b"x"), ("e/a", b"twice")])
def test_archives_with_links_or_names_outside_are_refused(tmp_path, bad):
    _tar(tmp_path / "a.tgz", [("e/a", b"data"), bad])
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(tmp_path / "a.tgz") as tar, pytest.raises(archive.UnsafeArchive):
        archive.extract(tar, archive.plain_members(tar, max_bytes=1 << 20), dest)
    assert not (tmp_path / "outside").exists() and not (tmp_path / "up").exists()


def test_archive_size_is_bounded_before_anything_is_written(tmp_path):
    _tar(tmp_path / "a.tgz", [("e/a", b"x" * 600), ("e/b", b"y" * 600)])
    with tarfile.open(tmp_path / "a.tgz") as tar:
        with pytest.raises(archive.UnsafeArchive, match="more than 1000 bytes"):
            archive.plain_members(tar, max_bytes=1000)
        members = archive.plain_members(tar, max_bytes=2000)
        (tmp_path / "d").mkdir()
        archive.extract(tar, members, tmp_path / "d")
    assert (tmp_path / "d" / "e" / "b").read_bytes() == b"y" * 600


def test_a_bundle_with_a_link_in_an_entry_is_refused_whole(tmp_path):
    store = CacheStore(tmp_path / "m1")
    entry = make_entry(store)
    good = tmp_path / "good.tgz"
    export_bundle(store, [entry.key], good, {})
    with tarfile.open(good) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    planted = tmp_path / "planted.tgz"
    _tar(planted, members + [(f"entries/{entry.key}/x", tarfile.SYMTYPE, "/tmp"),
                             (f"entries/{entry.key}/x/pwned", b"written through the link")])
    target = CacheStore(tmp_path / "m2")
    with pytest.raises(BundleError, match="not a plain file"):
        import_bundle(target, planted)
    assert not target.keys()
    assert not list(tmp_path.rglob("pwned"))


# -- what a forged entry is judged on -------------------------------------------------------------
# Appended to a winner: its answer is right only on the entry's own stored test input.
RIGHT_ONLY_THERE = """

_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, *args):
        out = super().forward(*args)
        big = max((a for a in args if isinstance(a, torch.Tensor)), key=lambda a: a.numel())
        if float(big.reshape(-1)[0]) == __FIRST__:
            return out
        return tuple(o + 1.0 for o in out) if isinstance(out, (tuple, list)) else out + 1.0
"""


def _right_only_on_stored(entry):
    from safetensors.torch import load_file
    vec = load_file(str(entry / "vectors.safetensors"))
    big = max((v for k, v in vec.items() if k.startswith("input.")), key=lambda v: v.numel())
    with open(entry / "winner.py", "a") as f:
        f.write("\nimport torch\n" + RIGHT_ONLY_THERE.replace(
            "__FIRST__", repr(float(big.reshape(-1)[0]))))
    _meta_edit(entry, origin="baseline:eager")      # "the user's own graph": not checked


def test_a_winner_labelled_baseline_right_only_on_its_stored_input_is_refused(tmp_path, capsys):
    from torch_cudal1.cli import main
    key, good, _, served = serve_forged(tmp_path, capsys, _right_only_on_stored)
    assert served["err"] < 1e-5                              # the fallback served
    (line,) = _lines(served["_stderr"], "refused")
    assert f"{key} from bundle" in line and "drawn near this call's are wrong" in line
    assert CacheStore(tmp_path / "m2").load(key) is None     # quarantined
    # the genuine bundle is checked on the same three cases, and served
    assert main(["cache", "import", str(good), "--device", "cpu",
                 "--cache-dir", str(tmp_path / "m3")]) == 0
    again = _compile(tmp_path / "m3", {"mode": "cache-only"})
    assert again["err"] < 1e-5 and again["stats"].get("foreign_checked") == 1
    assert again["stats"].get("cache_hits") == 1 and not again["stats"].get("fallbacks")


def test_served_calls_of_another_machines_entry_are_checked_whatever_its_label():
    assert not audit.wanted("baseline:eager", "first")
    assert audit.wanted("baseline:eager", "first", foreign=True)
    assert not audit.wanted("baseline:eager", "off", foreign=True)


def _foreign(store, entry, **imported):
    meta = dict(entry.meta, imported={"from": "b.tgz", "via": "bundle", **imported})
    (entry.path / META).write_text(json.dumps(meta))
    _reseal(entry.path)
    return store.load(entry.key)


def test_stored_inputs_that_are_not_inputs_of_the_key_refuse_the_entry(tmp_path):
    from safetensors.torch import save_file
    store = CacheStore(tmp_path)
    entry = make_entry(store)
    x = torch.randn(0, 8)                        # the key is for (4, 8): an empty batch
    save_file({"input.0": x, "output.0": x}, str(entry.path / "vectors.safetensors"))
    entry = _foreign(store, entry)
    with pytest.raises(VectorsUnfit, match="shape"):
        stored_vectors(entry.path)
    ok, why = foreign.check(store, entry, "cpu", reference=lambda t: torch.relu(t) * 2,
                            inputs=[torch.randn(4, 8)])
    assert not ok and "not inputs of its key" in why and store.load(entry.key) is None


def test_stored_vectors_larger_than_the_limit_are_not_read(tmp_path):
    store = CacheStore(tmp_path)
    entry = _foreign(store, make_entry(store))
    size = (entry.path / "vectors.safetensors").stat().st_size
    assert stored_vectors(entry.path, max_bytes=size - 1) is None
    assert stored_vectors(entry.path, max_bytes=size) is not None
    # checked on the call's own inputs instead
    ok, why = foreign.check(store, entry, "cpu", reference=lambda t: torch.relu(t) * 2,
                            inputs=[torch.randn(4, 8)], max_vector_bytes=size - 1)
    assert ok, why
    assert "vectors" not in json.loads((store.root / "checked" / f"{entry.key}.json")
                                       .read_text())["with"]


# -- inductor's artefacts ------------------------------------------------------------------------
def test_inductor_artefacts_load_only_from_entries_made_here_or_signed(tmp_path, monkeypatch):
    from torch_cudal1.cache import winner
    loaded = []
    monkeypatch.setattr(winner, "load_inductor_cache", lambda path: loaded.append(path))
    store = CacheStore(tmp_path)
    entry = make_entry(store)
    assert entry.artifacts_trusted
    winner.load_winner(entry, "cpu")
    assert len(loaded) == 1
    unsigned = _foreign(store, entry)
    assert not unsigned.artifacts_trusted
    winner.load_winner(unsigned, "cpu", module_name="cudal1_w_unsigned")
    assert len(loaded) == 1                      # not handed to inductor: its winner compiles
    signed = _foreign(store, entry, signed=True)
    assert signed.artifacts_trusted
    winner.load_winner(signed, "cpu", module_name="cudal1_w_signed")
    assert len(loaded) == 2


def test_bundles_are_signed_with_the_remote_secret(tmp_path):
    store = CacheStore(tmp_path / "m1")
    entry = make_entry(store)
    bundle = tmp_path / "b.tgz"
    export_bundle(store, [entry.key], bundle, {}, secret="s3cret")
    for secret, want in (("s3cret", True), ("other", False), (None, False)):
        target = CacheStore(tmp_path / f"m-{secret}")
        (report,) = import_bundle(target, bundle, secret=secret)
        assert report["status"] == "imported" and report["signed"] is want
        assert target.load(entry.key).artifacts_trusted is want
    # a signed bundle edited afterwards (hashes recomputed, signature kept) is unsigned
    forged = tmp_path / "forged.tgz"
    with tarfile.open(bundle) as tar:
        files = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    info = json.loads(dict(files)["bundle.json"])
    info["created"] = 0
    _tar(forged, [(n, json.dumps(info).encode() if n == "bundle.json" else b) for n, b in files])
    (report,) = import_bundle(CacheStore(tmp_path / "m-forged"), forged, secret="s3cret")
    assert report["signed"] is False


def test_cache_verify_refuses_a_task_file_that_is_not_its_keys(tmp_path, capsys):
    from torch_cudal1.cli import main
    task = tmp_path / "task.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.relu(x) * 2\n\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    from torch_cudal1.cache.key import task_key
    from torch_cudal1.task import Task
    key, fields = task_key(Task.from_file(str(task)), "cpu")
    store = CacheStore(tmp_path / "c")
    entry = make_entry(store, fields=fields)
    (entry.path / "task.py").write_text(task.read_text())
    _reseal(entry.path)
    args = ["cache", "verify", entry.key, "--cache-dir", str(tmp_path / "c"), "--device", "cpu",
            "--json", "--trials", "1"]
    assert main(args) == 0, capsys.readouterr()
    capsys.readouterr()
    # task, winner and stored outputs all changed alike: self-consistent, but not the key's task
    from safetensors.torch import load_file, save_file
    (entry.path / "task.py").write_text(task.read_text().replace("* 2", "* 3"))
    (entry.path / "winner.py").write_text(WINNER.replace("* 2", "* 3"))
    vec = load_file(str(entry.path / "vectors.safetensors"))
    save_file({"input.0": vec["input.0"], "output.0": torch.relu(vec["input.0"]) * 3},
              str(entry.path / "vectors.safetensors"))
    _reseal(entry.path)
    assert main(args) == 1
    out = json.loads(capsys.readouterr().out)
    assert "not the task its key was made for" in json.dumps(out)
