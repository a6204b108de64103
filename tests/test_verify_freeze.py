"""While the judge times the reference in its own process, no process of the candidate's runs:
work it keeps going in the background (a process forked at import, spinning whenever its worker
waits) would slow the reference, inflating the candidate's speedup and the harness cost its
reported times are excused by (``verify/freeze.py``)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, freeze
from torch_cudal1.verify.judge import MIN_TIMED_BATCHES

TASK = Path(__file__).parent / "adversarial" / "tasks" / "diag_matmul.py"

# Two processes appending to a file every millisecond, and one forking short-lived children
# all the time.
TREE = r'''
import os, sys, time
path = sys.argv[1]
def spin():
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    while True:
        os.write(fd, b"x")
        time.sleep(0.001)
for _ in range(2):
    if os.fork() == 0:
        spin()
if os.fork() == 0:
    while True:
        if os.fork() == 0:
            time.sleep(0.05)
            os._exit(0)
        time.sleep(0.001)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
spin()
'''


def _grows(path: Path, wait: float = 0.3) -> bool:
    before = path.stat().st_size
    time.sleep(wait)
    return path.stat().st_size > before


def test_a_forking_tree_is_stopped_whole_and_resumed(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"")
    p = subprocess.Popen([sys.executable, "-c", TREE, str(log)], start_new_session=True)
    try:
        time.sleep(0.5)
        assert _grows(log)
        record = {}
        with freeze.frozen(p.pid, record):
            pids = freeze.tree(p.pid)
            assert len(pids) >= 4
            assert all(freeze._state(pid) in (b"T", b"t", b"Z", None) for pid in pids), \
                {pid: freeze._state(pid) for pid in pids}
            assert not _grows(log)
            assert sorted(freeze.tree(p.pid)) == sorted(pids)   # nothing forked meanwhile
        assert record["stopped_processes"] >= 4
        assert _grows(log)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_no_root_stops_nothing():
    record = {}
    with freeze.frozen(None, record):
        pass
    assert record["stopped_processes"] == 0


# An honest product, with a process forked at import that notes each time it is continued after
# a stop (SIGCONT) into the candidate's build folder.
HELPER = '''
import importlib, os, time
import torch
import torch.nn as nn


def _note_continues(path):
    # (spelled so that the static check, a first line only, lets it through)
    f = getattr(importlib.import_module("builtins"), "op" + "en")(path, "a")

    def noted(signum, frame):
        f.write("continued\\n")
        f.flush()
    signals = importlib.import_module("sig" + "nal")
    signals.signal(signals.SIGCONT, noted)
    while True:
        time.sleep(0.001)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        path = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "continued.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if getattr(os, "fo" + "rk")() == 0:
            _note_continues(path)   # never returns

    def forward(self, a, b):
        return a.unsqueeze(1) * b
'''


def test_the_candidates_processes_do_not_run_while_the_reference_is_timed(monkeypatch, tmp_path):
    # forking is forbidden_call under the worker's audit hook; libraries may still start
    # processes (compile pools), and the sandbox alone must hold: so the hook is off here
    monkeypatch.setenv("CUDAL1_AUDIT", "0")
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    verdict, timing = evaluate(Task.from_file(TASK), Candidate(HELPER, origin="openai:r1s0"),
                               timeout_s=120, time_budget_s=0.6, pair_reference=True,
                               build_cache_dir=str(tmp_path / "builds"))
    assert verdict.accepted, verdict.detail
    # the worker and the process it forked at least (and bubblewrap's where it runs)
    assert timing.extra["stopped_processes"] >= 2
    continued = [x for p in (tmp_path / "builds").rglob("continued.txt")
                 for x in p.read_text().split()]
    # stopped for each reference batch: the warm-up one and at least MIN_TIMED_BATCHES more
    assert len(continued) >= MIN_TIMED_BATCHES + 1
