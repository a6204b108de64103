"""A search killed with SIGKILL leaves no candidate running: the verifier's child (in its own
session, so that timeouts kill its whole group) dies with the process that started it."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import ROOT

ADV = Path(__file__).parent / "adversarial"


def _pids_in(wd: Path) -> list[int]:
    """Processes whose working directory is ``wd`` (the verifier's child runs there, whether it
    was started as a fresh interpreter or forked from the template)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.readlink(d / "cwd") == str(wd):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


@pytest.mark.parametrize("forkserver", ["0", "1"])
def test_killed_parent_leaves_no_verifier_child(tmp_path, forkserver):
    wd = tmp_path / "candidate-work"
    code = textwrap.dedent(f"""
        from torch_cudal1.contracts import Candidate
        from torch_cudal1.task import Task
        from torch_cudal1.verify import evaluate
        task = Task.from_file({str(ADV / "tasks" / "diag_matmul.py")!r})
        cand = Candidate(open({str(ADV / "hang.py")!r}).read(), "test:hang")
        evaluate(task, cand, device="cpu", timeout_s=300, workdir={str(wd)!r})
    """)
    env = dict(os.environ, CUDAL1_VERIFY_FORKSERVER=forkserver, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 120
        while not _pids_in(wd):
            assert parent.poll() is None, "the parent ended before starting its child"
            assert time.monotonic() < deadline, "the verifier child never started"
            time.sleep(0.2)
        time.sleep(2.0)   # the child is now importing or running the hanging candidate
        assert _pids_in(wd)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 20
    while _pids_in(wd) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _pids_in(wd)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"verifier child {left} outlived its killed parent"
