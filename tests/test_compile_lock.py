"""A verification does not hold the device lock while its candidate's first calls compile
(lazy torch.compile, max-autotune: minutes of CPU work), so other processes' timings do not wait
for a whole build."""
import threading
import time
from pathlib import Path

from torch_cudal1.bench.device_lock import DeviceLock
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

TASKS = Path(__file__).parent / "adversarial" / "tasks"


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
