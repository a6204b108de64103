"""A verification lets go of the device lock while its candidate compiles, so other processes'
timings do not wait for a whole build (a max-autotune build can take minutes); the device work
of a compile, autotune benchmarks, still holds it."""
import fcntl
import threading
import time
from pathlib import Path

import pytest
import torch

from torch_cudal1.bench.device_lock import DeviceLock
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import compile_lock, evaluate

TASKS = Path(__file__).parent / "adversarial" / "tasks"


def _exclusive_free(directory) -> bool:
    """Whether another process could take the device for a timing right now."""
    with open(Path(directory) / "cpu.lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


@pytest.fixture
def hooked(tmp_path):
    lock = DeviceLock("cpu", directory=str(tmp_path))
    uninstall = compile_lock.install(lock)
    assert uninstall is not None
    yield lock
    uninstall()
    torch._dynamo.reset()


def test_the_hold_is_let_go_while_dynamo_compiles_and_taken_back_for_the_calls(tmp_path, hooked):
    during = []

    def backend(gm, example_inputs):
        during.append(_exclusive_free(tmp_path))
        return gm.forward

    f = torch.compile(lambda x: x * 2 + 1, backend=backend)
    with hooked.shared():
        assert not _exclusive_free(tmp_path)
        assert torch.equal(f(torch.ones(4)), torch.full((4,), 3.0))
        assert not _exclusive_free(tmp_path), "the calls after the compile run without the lock"
    assert during == [True]
    assert _exclusive_free(tmp_path)


def test_autotune_benchmarks_inside_a_compile_hold_the_lock(tmp_path, hooked):
    from torch._inductor.runtime.benchmarking import benchmarker
    during, in_bench = [], []

    def backend(gm, example_inputs):
        during.append(_exclusive_free(tmp_path))
        benchmarker.benchmark_cpu(lambda: in_bench.append(_exclusive_free(tmp_path)), 1, 1)
        return gm.forward

    f = torch.compile(lambda x: x - 1, backend=backend)
    with hooked.shared():
        f(torch.ones(3))
    assert during == [True]
    assert in_bench and not any(in_bench), "a benchmark ran while another process could time"


def test_a_timing_does_not_wait_for_another_process_candidates_compile(tmp_path, monkeypatch):
    """Real child: its candidate's backend signals that it compiles, then waits for a file that
    this process writes once it holds the device exclusively. Without the hooks that exclusive
    hold would wait until the whole verification ended."""
    locks = tmp_path / "locks"
    monkeypatch.setenv("CUDAL1_DEVICE_LOCK_DIR", str(locks))
    task = Task.from_file(TASKS / "linear_act.py")
    source = task.source + '''

import os
import time


def _slow_backend(gm, example_inputs):
    open("compiling", "w").close()
    t0 = time.monotonic()
    while not os.path.exists("go") and time.monotonic() - t0 < 40:
        time.sleep(0.05)
    return gm.forward


class ModelNew(Model):
    def __init__(self, *args):
        super().__init__(*args)
        self.compiled = torch.compile(super().forward, backend=_slow_backend)

    def forward(self, *args):
        return self.compiled(*args)
'''
    wd = tmp_path / "wd"
    out = {}
    t = threading.Thread(target=lambda: out.update(v=evaluate(
        task, Candidate(source, "test:compiled"), device="cpu", trials=2, timeout_s=240,
        time_it=False, workdir=str(wd), keep=True)[0]))
    t.start()
    t0 = time.monotonic()
    own = wd / "worker"   # the candidate's process works in its own folder
    while not (own / "compiling").exists() and t.is_alive() and time.monotonic() - t0 < 200:
        time.sleep(0.05)
    assert (own / "compiling").exists(), out
    t1 = time.monotonic()
    with DeviceLock("cpu", directory=str(locks)).exclusive():
        waited = time.monotonic() - t1
        (own / "go").write_text("")
    t.join(240)
    assert out["v"].accepted, out["v"]
    assert waited < 20, f"the timing waited {waited:.1f} s for another process's compile"


@pytest.mark.gpu
def test_max_autotune_on_cuda_tunes_under_the_lock_and_compiles_without_it(tmp_path):
    """On this torch, inductor's max-autotune reaches its benchmarks through the benchmarker the
    hooks wrap, and Dynamo's compile callbacks fire: the hold is let go and taken back."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (run with -m gpu on the device)")
    from torch._inductor import config
    lock = DeviceLock("cuda", directory=str(tmp_path))
    uninstall = compile_lock.install(lock)
    assert uninstall is not None
    before = dict(compile_lock.stats)
    waited = []
    orig_resume = lock.resume

    def resume():
        waited.append(lock._suspended)
        orig_resume()
    lock.resume = resume
    a = torch.randn(192, 320, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(320, 448, device="cuda", dtype=torch.bfloat16)
    try:
        with config.patch(autotune_local_cache=False, fx_graph_cache=False):
            f = torch.compile(lambda x, y: (x @ y).relu(), mode="max-autotune-no-cudagraphs")
            with lock.shared():
                got = f(a, b)
                assert lock._shared == 1 and not lock._suspended
    finally:
        uninstall()
        torch._dynamo.reset()
    torch.testing.assert_close(got, (a @ b).relu(), rtol=2e-2, atol=2e-2)
    assert compile_lock.stats["compiles"] > before["compiles"]
    assert compile_lock.stats["benchmarks"] > before["benchmarks"], "no autotune benchmark was locked"
    assert waited and all(d == 1 for d in waited), "the hold was not taken back after the compile"
