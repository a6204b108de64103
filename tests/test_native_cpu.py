"""The native helpers' CPU build (csrc/, one g++ build of ~1 min): the C++ output
checker and the C++ clock of the timing harness, in the harness and in the verifier's child."""
import time

import pytest
import torch

from torch_cudal1.bench import native, timing
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

from test_device_lock import TASKS


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CUDAL1_BUILD_CACHE_DIR", str(tmp_path_factory.mktemp("native-build")))
    mp.setattr(native, "_flavour", lambda: "cpu")
    native._loaded.clear()
    try:
        yield native.build()
    finally:
        native._loaded.clear()
        mp.undo()


def test_checker_statistics(built):
    ref = torch.tensor([1.0, 2.0, float("inf"), 4.0])
    out = torch.tensor([1.0, 2.5, float("inf"), float("nan")])
    err, refn, maxabs, exceed, bad = built.check_close(ref, out, 0.01, 0.0)
    assert maxabs == pytest.approx(0.5) and exceed == 1 and bad == 1
    assert refn == pytest.approx(5 ** 0.5)   # over the elements finite in both


def test_checker_gives_the_same_verdicts_in_pieces(built, monkeypatch):
    """The C++ checker's element bound uses the rms of what it is handed: given a piece of a
    large output, the whole output's rms must still decide."""
    from test_verify_units import _verdicts_in_pieces
    got = _verdicts_in_pieces(monkeypatch, checker=built)
    assert [v[0][0] for v in got.values()] == ["ok", "mismatch", "ok", "nan", "ok", "mismatch"]
    for name, (whole, pieced) in got.items():
        assert whole[0] == pieced[0] and whole[1] == pieced[1], name
        assert whole[2] == pytest.approx(pieced[2], rel=1e-6), name


def test_native_clock_is_used_and_ignores_a_patched_perf_counter(built, monkeypatch):
    def slow(x):
        time.sleep(0.002)
        return x + 1

    t = timing.time_callable(slow, [[torch.ones(4)]], "cpu", budget_s=0.2, min_reps=5)
    assert t.extra["clock"] == "native" and t.median_ms >= 2.0
    # A candidate that freezes the Python clock does not freeze the harness's.
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    t = timing.time_callable(slow, [[torch.ones(4)]], "cpu", budget_s=0.2, min_reps=5, reps=20)
    assert t.extra["clock"] == "native" and t.median_ms >= 2.0


def test_verifier_child_uses_the_native_helpers(built, monkeypatch):
    monkeypatch.setenv("CUDAL1_NATIVE", "auto")   # use a prior build, as the child will
    task = Task.from_file(TASKS / "linear_act.py")
    cand = Candidate(task.source + "\n\nclass ModelNew(Model):\n    pass\n", "test:eager")
    v, t = evaluate(task, cand, device="cpu", trials=2, timeout_s=120, time_budget_s=0.3)
    assert v.accepted, v
    assert v.stats["checker"] == "native"
    assert t.extra["clock"] == "judge-cross-checked"   # the judge's clock, in its own process


def test_a_build_carried_to_a_fresh_machine_loads_without_building(built, tmp_path, monkeypatch):
    """A fresh GPU machine spends over a minute building the helpers. A build exported under its key imports on a machine with an empty build cache; one
    that is not this machine's (other sources, torch or CUDA) is never imported."""
    carried = native.export_build(tmp_path / "carry")
    assert carried is not None and native.build_key() in carried.name
    monkeypatch.setenv("CUDAL1_NATIVE", "auto")   # load() imports a build, never makes one
    monkeypatch.setenv("CUDAL1_BUILD_CACHE_DIR", str(tmp_path / "fresh"))
    native._loaded.clear()
    assert native.load() is None                      # nothing built on the fresh machine
    assert native.import_build(tmp_path / "carry")
    mod = native.load()
    assert mod is not None and mod.check_close(torch.ones(3), torch.ones(3), 0.01, 0.0)[4] == 0
    # another machine's build (its key differs): not imported, and the fresh cache stays empty
    monkeypatch.setenv("CUDAL1_BUILD_CACHE_DIR", str(tmp_path / "fresh2"))
    native._loaded.clear()
    carried.rename(carried.with_name(native._name("cpu") + "-0123456789abcdef.so"))
    assert not native.import_build(tmp_path / "carry") and native.load() is None
    # a file under the right key that does not import is refused and removed again
    (tmp_path / "carry" / carried.name).write_bytes(b"not a shared object")
    assert not native.import_build(tmp_path / "carry")
    assert not list((tmp_path / "fresh2").rglob("*.so"))
    native._loaded.clear()
