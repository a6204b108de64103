"""The processes cudal1 starts share the CPUs as the caller's own threads do: each in a process
group of its own (a timeout kills the group), in the caller's session, without a terminal. A new
session is a scheduling group of its own where the kernel groups by session (autogroup), and
torch's threads in it stall at every parallel op beside the caller's busy threads
(``verify/process.py: own_group``; ``benchmarks/foreign_load.py`` measures it)."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, os_sandbox
from torch_cudal1.verify.process import child_limits, has_terminal, own_group

TASK = Path(__file__).parent / "adversarial" / "tasks" / "diag_matmul.py"
SLOW = '''
import time
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, a, b):
        time.sleep(0.002)
        return a.unsqueeze(1) * b
'''


def _stat(pid: int) -> tuple[int, int, int]:
    """(parent, process group, session) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def _autogroup(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/autogroup") as fh:
            words = fh.read().split()
    except OSError:
        return None
    return words[0] if words else None


def _descendants() -> dict[int, tuple[int, int, str | None, str]]:
    """This process's descendants now: pid -> (process group, session, autogroup, command)."""
    parent, info = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            ppid, pgrp, sid = _stat(pid)
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        parent[pid] = ppid
        info[pid] = (pgrp, sid, _autogroup(pid), cmd)
    me, out = os.getpid(), {}
    for pid in info:
        p, seen = parent.get(pid), 0
        while p and p != me and seen < 64:
            p, seen = parent.get(p), seen + 1
        if p == me:
            out[pid] = info[pid]
    return out


pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")


def test_a_verifier_child_is_its_own_group_in_the_callers_session_without_a_terminal():
    probe = ("import os\n"
             "try:\n    os.close(os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)); tty = 1\n"
             "except OSError:\n    tty = 0\n"
             "print(os.getpid(), os.getpgrp(), os.getsid(0), tty)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         preexec_fn=child_limits(None), check=True).stdout.split()
    pid, pgrp, sid, tty = map(int, out)
    assert pgrp == pid                      # its own group: killpg(pid) ends what it started
    assert sid == os.getsid(0)              # not a session (a scheduling group) of its own
    assert tty == 0                         # nothing it starts reaches the user's terminal
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         preexec_fn=own_group, check=True).stdout.split()
    assert int(out[1]) == int(out[0]) and int(out[2]) == os.getsid(0) and out[3] == "0"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_killing_a_verifier_childs_group_ends_what_it_started():
    child = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, time\n"
                              "p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True)\n"
                              "time.sleep(60)\n"], stdout=subprocess.PIPE, text=True,
                             preexec_fn=child_limits(None))
    grandchild = int(child.stdout.readline())
    assert _alive(grandchild)
    os.killpg(child.pid, 9)
    child.wait()
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_the_sandbox_makes_a_session_only_where_a_terminal_is_left(monkeypatch):
    if os_sandbox.bwrap_path() is None:
        monkeypatch.setattr(os_sandbox, "bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(os_sandbox, "has_terminal", lambda: False)
    argv = os_sandbox.wrap(["true"], chdir="/", writable=[], gpu=False)
    assert "--new-session" not in argv and "--unshare-all" in argv and "--die-with-parent" in argv
    monkeypatch.setattr(os_sandbox, "has_terminal", lambda: True)
    assert "--new-session" in os_sandbox.wrap(["true"], chdir="/", writable=[], gpu=False)


@pytest.mark.parametrize("forkserver", ["0", "1"])
def test_a_verification_runs_in_the_callers_session_and_scheduling_group(tmp_path, monkeypatch,
                                                                           forkserver):
    """The judge, the candidate's worker (sandboxed where bubblewrap works) and the template
    judges are forked from, looked at from outside while they run."""
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", forkserver)
    seen: dict = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            for pid, v in _descendants().items():
                if v[3] and pid not in seen:     # as first seen with its command line
                    seen[pid] = v
            time.sleep(0.02)
    t = threading.Thread(target=watch)
    t.start()
    try:
        for _ in range(2):   # the second verification forked from the template, once it is up
            verdict, _timing = evaluate(Task.from_file(TASK), Candidate(SLOW, origin="openai:r1s0"),
                                        timeout_s=120, time_budget_s=0.3,
                                        build_cache_dir=str(tmp_path / "builds"))
            assert verdict.accepted, verdict
    finally:
        done.set()
        t.join()
    # the candidate's worker reads its program from a pipe (``python -``, harness/worker.py)
    workers = {p: v for p, v in seen.items() if v[3].rstrip().endswith(" -")}
    assert workers, seen
    ours = {**{p: v for p, v in seen.items() if "torch_cudal1." in v[3]}, **workers}
    mine = _autogroup(os.getpid())
    for pid, (pgrp, sid, group, cmd) in ours.items():
        assert sid == os.getsid(0), (cmd[:160], sid)
        assert group == mine, (cmd[:160], group, mine)
    for pid, (pgrp, _sid, _group, cmd) in ours.items():
        if "torch_cudal1.verify.judge" in cmd:
            assert pgrp == pid          # the group a timeout kills


def test_the_background_search_worker_shares_the_servers_session(tmp_path):
    """The worker of ``mode="async"`` outlives the server (its own group, no terminal), but
    shares its session: the served model's threads and the search's share the CPUs thread by
    thread."""
    from torch_cudal1.serve.worker import run_job_process
    res = run_job_process(tmp_path, timeout=0.01)      # no job here: it fails, but not yet
    assert res["status"] == "running", res
    pid = res["pid"]
    try:
        _ppid, pgrp, sid = _stat(pid)
        assert pgrp == pid and sid == os.getsid(0)
        assert _autogroup(pid) == _autogroup(os.getpid())
    finally:
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
