"""Timings on a shared device never overlap other processes' work on it (real processes)."""
import multiprocessing as mp
import threading
import time
from pathlib import Path

import pytest
from helpers import run_python

from torch_cudal1.bench.device_lock import DeviceLock
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

TASKS = Path(__file__).parent / "adversarial" / "tasks"


def _hold(directory, mode, seconds, log, start_evt):
    lock = DeviceLock("cpu", directory=directory)
    start_evt.wait()
    with (lock.exclusive() if mode == "ex" else lock.shared()):
        t0 = time.monotonic()
        time.sleep(seconds)
        log.put((mode, t0, time.monotonic()))


def _run(directory, plan):
    ctx = mp.get_context("fork")   # the holders use no torch
    log, go = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_hold, args=(directory, m, s, log, go)) for m, s in plan]
    for p in procs:
        p.start()
    time.sleep(1.0)
    go.set()
    for p in procs:
        p.join(60)
    return [log.get(timeout=5) for _ in procs]


def test_exclusive_never_overlaps_anything(tmp_path):
    spans = _run(str(tmp_path), [("sh", 0.6), ("sh", 0.6), ("ex", 0.6), ("sh", 0.6), ("ex", 0.6)])
    ex = [s for s in spans if s[0] == "ex"]
    for m, a0, a1 in ex:
        for other in spans:
            if other[1:] == (a0, a1):
                continue
            b0, b1 = other[1:]
            assert a1 <= b0 or b1 <= a0, f"exclusive span overlaps {other[0]}: {spans}"
    sh = sorted(s[1:] for s in spans if s[0] == "sh")
    # Shared holders may run side by side (they are not serialised against each other).
    assert len(sh) == 3


def test_writer_is_not_starved_by_a_stream_of_readers(tmp_path):
    stop = threading.Event()
    got = []

    def reader():
        lock = DeviceLock("cpu", directory=str(tmp_path))
        while not stop.is_set():
            with lock.shared():
                time.sleep(0.05)

    # Separate processes would be the real case; separate DeviceLocks (separate open files)
    # contend through flock just the same.
    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        with DeviceLock("cpu", directory=str(tmp_path)).exclusive():
            got.append(time.monotonic() - t0)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert got and got[0] < 5.0


def test_off_switch_and_bad_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDAL1_DEVICE_LOCK", "0")
    assert not DeviceLock("cpu").active
    monkeypatch.delenv("CUDAL1_DEVICE_LOCK")
    blocker = tmp_path / "file"
    blocker.write_text("")
    lock = DeviceLock("cpu", directory=str(blocker / "sub"))   # cannot be created: no lock
    assert not lock.active
    with lock.exclusive(), lock.shared():
        pass


def test_verifier_waits_while_another_process_times_on_the_device(tmp_path):
    """The verifier's calls take the device lock: while it is held exclusively (another
    process timing), the candidate cannot run, and the verification ends at its own limit (not
    when its parent gives up on it); once released, the same work passes."""
    task = Task.from_file(TASKS / "linear_act.py")
    cand = Candidate(task.source + "\n\nclass ModelNew(Model):\n    pass\n", "test:eager")
    env = {"CUDAL1_DEVICE_LOCK_DIR": str(tmp_path / "locks")}
    holder = DeviceLock("cpu", directory=env["CUDAL1_DEVICE_LOCK_DIR"])
    assert holder.active
    with holder.exclusive():
        t0 = time.monotonic()
        v, _ = evaluate(task, cand, device="cpu", trials=2, timeout_s=6, time_it=False,
                        extra_env=env)
        waited = time.monotonic() - t0
    assert not v.accepted and v.reason == "timeout", v
    assert "another process" in v.detail and waited < 6 + 20, (waited, v.detail)
    v, t = evaluate(task, cand, device="cpu", trials=2, timeout_s=120, extra_env=env)
    assert v.accepted, v
    assert t is not None and t.median_ms > 0


@pytest.mark.gpu
def test_one_lock_per_physical_gpu_whatever_is_visible():
    """Runners pinned with CUDA_VISIBLE_DEVICES must meet on the same lock for the same GPU."""
    import torch
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    code = "from torch_cudal1.bench.device_lock import device_id; import json; print(json.dumps({'id': device_id('cuda')}))"
    pinned = [run_python(code, env={"CUDA_VISIBLE_DEVICES": str(i)})["id"] for i in (0, 1)]
    from torch_cudal1.bench.device_lock import device_id
    assert pinned == [device_id("cuda:0"), device_id("cuda:1")]
    assert pinned[0] != pinned[1] and all(p.startswith("gpu-") for p in pinned)


def test_nested_shared_keeps_the_lock_until_the_outer_release(tmp_path):
    a = DeviceLock("cpu", directory=str(tmp_path))
    b = DeviceLock("cpu", directory=str(tmp_path))
    import fcntl
    with a.shared():
        with a.shared():
            pass
        # Still held shared by ``a``: an exclusive attempt from another open file must fail.
        try:
            fcntl.flock(b._fds[1], fcntl.LOCK_EX | fcntl.LOCK_NB)
            got = True
        except BlockingIOError:
            got = False
        assert not got
    fcntl.flock(b._fds[1], fcntl.LOCK_EX | fcntl.LOCK_NB)   # free once the outer one ends


def test_a_wait_for_the_lock_is_counted_apart_from_the_phase_it_falls_in(tmp_path):
    """The records split a verification's time into its phases and its lock waits; a wait
    inside a phase (here the reference's canary, taken under the lock) is counted once, as a
    wait, or the phases add up to more than the child's time."""
    import threading
    task = Task.from_file(TASKS / "linear_act.py")
    cand = Candidate(task.source + "\n\nclass ModelNew(Model):\n    pass\n", "test:eager")
    env = {"CUDAL1_DEVICE_LOCK_DIR": str(tmp_path / "locks")}
    holder = DeviceLock("cpu", directory=env["CUDAL1_DEVICE_LOCK_DIR"])
    held, release = threading.Event(), threading.Event()

    def hold():
        with holder.exclusive():
            held.set()
            release.wait(60)
    threading.Thread(target=hold, daemon=True).start()
    held.wait(10)
    threading.Timer(4.0, release.set).start()
    v, _ = evaluate(task, cand, device="cpu", trials=2, timeout_s=120, time_it=False,
                    extra_env=env)
    assert v.accepted, v
    phases = v.stats["phases"]
    assert phases["lock_wait_s"] > 2.0, phases
    assert phases["reference_s"] + phases["verify_s"] < phases["lock_wait_s"], phases
