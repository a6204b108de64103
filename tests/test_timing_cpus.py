"""Timings run on the host cores reserved for them, and say how quiet the host was."""
import os
import threading
from pathlib import Path

import pytest
from helpers import run_python

from torch_cudal1.bench.timing_cpus import parse_cpus, plan, timing_cpus
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

TASKS = Path(__file__).parent / "adversarial" / "tasks"
CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="needs two usable CPUs")


def test_parse_cpus():
    assert parse_cpus("0-2,5") == {0, 1, 2, 5}
    assert parse_cpus(" 3 ") == {3}
    assert parse_cpus("") == set() and parse_cpus(None) == set()
    for bad in ("2-1", "x", "-1"):
        with pytest.raises(ValueError):
            parse_cpus(bad)


@needs_two
def test_the_timing_thread_moves_for_the_timing_and_back(monkeypatch):
    reserved = CPUS[-1]
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", str(reserved))
    before = os.sched_getaffinity(0)
    record: dict = {}
    with timing_cpus(record):
        inside = os.sched_getaffinity(0)
    assert inside == {reserved}
    assert record["timing_cpus"] == [reserved]
    assert record["involuntary_switches"] >= 0 and record["load1"] >= 0
    assert os.sched_getaffinity(0) == before   # moved back


@needs_two
def test_a_thread_named_for_the_timing_moves_with_it_and_back(monkeypatch):
    """The verifier's worker times calls made by its candidate's thread: that thread is moved to
    the reserved cores with the timing thread, counted in its switches, and moved back."""
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", str(CPUS[-1]))
    ready, look, seen_in, finish = (threading.Event() for _ in range(4))
    ids, seen = {}, {}

    def caller():
        ids["tid"] = threading.get_native_id()
        ready.set()
        look.wait(10)
        seen["inside"] = os.sched_getaffinity(0)
        seen_in.set()
        finish.wait(10)
        seen["after"] = os.sched_getaffinity(0)

    t = threading.Thread(target=caller)
    t.start()
    ready.wait(10)
    record: dict = {}
    with timing_cpus(record, (ids["tid"],)):
        look.set()
        seen_in.wait(10)
    finish.set()
    t.join()
    assert seen["inside"] == {CPUS[-1]} and seen["after"] == set(CPUS)
    assert record["involuntary_switches"] >= 0


@needs_two
def test_a_thread_running_before_the_hold_keeps_its_cpus(monkeypatch):
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", str(CPUS[-1]))
    go, done, seen = threading.Event(), threading.Event(), {}

    def worker():
        go.wait()
        seen["mask"] = os.sched_getaffinity(0)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    with timing_cpus({}):
        go.set()
        done.wait(10)
    t.join()
    assert seen["mask"] == set(CPUS)


@needs_two
def test_a_thread_started_during_the_hold_leaves_the_reserved_core_after_it(monkeypatch):
    """A thread started by the timed code inherits the reserved core; left there it would take
    that core from every later timing in the process (the paired reference's right after)."""
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", str(CPUS[-1]))
    release, seen = threading.Event(), {}

    def worker():
        seen["inside"] = os.sched_getaffinity(0)
        release.wait(10)
        seen["after"] = os.sched_getaffinity(0)

    record: dict = {}
    with timing_cpus(record):
        t = threading.Thread(target=worker)
        t.start()
        while "inside" not in seen:
            pass
    release.set()
    t.join()
    assert seen == {"inside": {CPUS[-1]}, "after": set(CPUS)}
    assert record["threads_moved_back"] == 1


def test_a_bad_setting_times_where_it_is_and_says_why(monkeypatch):
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", "3-1")
    before = os.sched_getaffinity(0)
    record: dict = {}
    with timing_cpus(record):
        assert os.sched_getaffinity(0) == before
    assert "ignored" in record["cpu_note"] and "timing_cpus" not in record


def test_a_cpu_the_host_does_not_have_is_refused_not_fatal(monkeypatch):
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", "100000")
    record: dict = {}
    with timing_cpus(record):
        pass
    assert "not applied" in record["cpu_note"]


@needs_two
def test_work_cpus_restrict_a_process_and_its_children():
    out = run_python(
        "import os, subprocess, sys, json\n"
        "from torch_cudal1.bench.timing_cpus import apply_work_cpus\n"
        "note = apply_work_cpus()\n"
        "child = subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'],"
        " capture_output=True, text=True).stdout.strip()\n"
        "print(json.dumps({'note': note, 'me': sorted(os.sched_getaffinity(0)), 'child': child}))\n",
        env={"CUDAL1_WORK_CPUS": str(CPUS[0])})
    assert out["note"] == ""
    assert out["me"] == [CPUS[0]] and out["child"] == str([CPUS[0]])


@needs_two
@pytest.mark.parametrize("forked", ["0", "1"])
def test_the_verifiers_timing_runs_on_the_reserved_cpu(tmp_path, monkeypatch, forked):
    """Through the real verifier child (fresh or forked): the timing reports the reserved CPU."""
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", forked)
    task = Task.from_file(TASKS / "linear_act.py")
    cand = Candidate(task.source + "\n\nclass ModelNew(Model):\n    pass\n", "test:eager")
    env = {"CUDAL1_TIMING_CPUS": str(CPUS[-1]), "CUDAL1_DEVICE_LOCK_DIR": str(tmp_path / "locks")}
    v, t = evaluate(task, cand, device="cpu", trials=2, timeout_s=120, extra_env=env)
    assert v.accepted, v
    assert t.extra["timing_cpus"] == [CPUS[-1]]
    assert t.extra["involuntary_switches"] >= 0


def test_plan_gives_each_device_a_core_and_keeps_work_apart():
    timing, work = plan(2, cpus={0, 1, 2, 3, 4})
    assert len(timing) == 2 and all(timing) and work
    flat = set().union(*timing)
    assert not flat & work and flat | work == {0, 1, 2, 3, 4}
    assert 0 not in flat   # CPU 0 takes the host's interrupts by default: work, not timings
    with pytest.raises(ValueError):
        plan(2, cpus={0, 1})   # nothing left for work


def test_plan_cli_prints_sets_the_shell_can_use():
    if len(CPUS) < 2:
        pytest.skip("needs two usable CPUs")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "torch_cudal1.bench.timing_cpus", "1"],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    assert len(out) == 2
    assert not parse_cpus(out[0]) & parse_cpus(out[1])


def test_warm_workers_sharing_a_gpu_share_its_timing_core(monkeypatch):
    from torch_cudal1.cli import warm_cmd
    monkeypatch.delenv("CUDAL1_TIMING_CPUS", raising=False)
    monkeypatch.delenv("CUDAL1_WORK_CPUS", raising=False)
    monkeypatch.setattr("torch_cudal1.bench.timing_cpus.os.sched_getaffinity",
                        lambda pid: {0, 1, 2, 3, 4, 5})
    p = warm_cmd.cpu_plan(["0", "0", "1", "1"])
    assert set(p) == {"0", "1"}
    t0, t1 = parse_cpus(p["0"][0]), parse_cpus(p["1"][0])
    work = parse_cpus(p["0"][1])
    assert t0 and t1 and not t0 & t1 and not (t0 | t1) & work and p["0"][1] == p["1"][1]
    monkeypatch.setenv("CUDAL1_TIMING_CPUS", "0")   # the user's own setting wins
    assert warm_cmd.cpu_plan(["0", "1"]) == {}
