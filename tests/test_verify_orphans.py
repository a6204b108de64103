"""A search killed with SIGKILL leaves no candidate running: the verifier's child (in its own
session, so that timeouts kill its whole group) dies with the process that started it."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from helpers import ROOT

ADV = Path(__file__).parent / "adversarial"


def _pids_with(marker: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_killed_parent_leaves_no_verifier_child(tmp_path):
    wd = tmp_path / "candidate-work"
    code = textwrap.dedent(f"""
        from torch_cudal1.contracts import Candidate
        from torch_cudal1.task import Task
        from torch_cudal1.verify import evaluate
        task = Task.from_file({str(ADV / "tasks" / "diag_matmul.py")!r})
        cand = Candidate(open({str(ADV / "hang.py")!r}).read(), "test:hang")
        evaluate(task, cand, device="cpu", timeout_s=300, workdir={str(wd)!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, "-c", code], env=env)
    marker = f"torch_cudal1.verify.child {wd}"
    try:
        deadline = time.monotonic() + 120
        while not _pids_with(marker):
            assert parent.poll() is None, "the parent ended before starting its child"
            assert time.monotonic() < deadline, "the verifier child never started"
            time.sleep(0.2)
        time.sleep(2.0)   # the child is now importing or running the hanging candidate
        assert _pids_with(marker)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 20
    while _pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _pids_with(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"verifier child {left} outlived its killed parent"
