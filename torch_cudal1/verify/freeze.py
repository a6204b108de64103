"""The candidate's processes stopped while the judge times the reference in its own process.

The judge times the reference (eager's code) batch by batch beside the candidate's batches. That
time is the candidate's reported speedup (``cudal1 verify --speedup``, the search's paired
figure) and the measure of the harness's own cost per call in the clock's cross-check
(``Judge._cross_check``). Between its batches the candidate's worker waits on its pipe, but code
it started (a child process, one a library spun off for it) could keep a core, or the GPU's
queue, busy exactly then: the reference would look slower and the candidate faster, and a
larger harness cost would excuse reported times that leave work out.

So the whole sandbox tree gets SIGSTOP once its batch has been answered and SIGCONT just before
its next one: the judge times the reference, and reads the candidate's output slots, while
nothing of the candidate's runs (a process of its own mapping the slots cannot write them between
two of the judge's reads). A stopped process runs no code and launches no work (what it queued on
the GPU before runs on); one that forks while it is being stopped is found on a later look at the
tree, which is read again until no process in it is left running.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time

from . import host_load

# How long ``stop_tree`` waits for a signalled process to show as stopped (one in the kernel
# stops on its way out of it).
SETTLE_S = 0.5
_STOPPED = (b"T", b"t", b"Z", b"X", None)


def _children(pid: int) -> list[int] | None:
    """The children of ``pid`` from ``/proc/<pid>/task/*/children``; None where the kernel does
    not provide that file (then the whole process table is read)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue   # the thread ended meanwhile
            return None
        except OSError:
            continue
    return out


def tree(root: int) -> list[int]:
    """``root`` and all its descendants now."""
    out, todo, seen = [], [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        kids = _children(pid)
        if kids is None:
            return host_load._tree(root, host_load._proc_table())
        if os.path.exists(f"/proc/{pid}"):
            out.append(pid)
        todo.extend(kids)
    return out


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2:][:1]


def stop_tree(root: int) -> list[int]:
    """SIGSTOP to every process under ``root`` until none of them is left running; the pids
    stopped (for ``cont``)."""
    stopped: list[int] = []
    done: set[int] = set()
    deadline = time.monotonic() + SETTLE_S
    while True:
        # Once every process seen so far shows as stopped, none can fork any more (a process
        # stops on its way back from the kernel, a fork complete), so a look after that sees
        # the whole tree.
        settled = all(_state(p) in _STOPPED for p in stopped)
        fresh = [p for p in tree(root) if p not in done]
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            done.add(pid)
        if (settled and not fresh) or time.monotonic() > deadline:
            return stopped
        if not fresh:
            time.sleep(0.0002)


def cont(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)


class Freezer:
    """The tree under ``root`` stopped (``stop``) and continued (``cont``) as often as needed;
    continued on leaving the block. Nothing where ``root`` is None.
    ``record["stopped_processes"]`` keeps the largest number stopped at once."""

    def __init__(self, root: int | None, record: dict | None = None):
        self.root, self.record, self.pids = root, record, []

    def stop(self) -> None:
        if self.pids:
            return
        self.pids = stop_tree(self.root) if self.root is not None else []
        if self.record is not None:
            self.record["stopped_processes"] = max(self.record.get("stopped_processes", 0),
                                                   len(self.pids))

    def cont(self) -> None:
        cont(self.pids)
        self.pids = []

    def __enter__(self) -> "Freezer":
        return self

    def __exit__(self, *exc) -> None:
        self.cont()


@contextlib.contextmanager
def frozen(root: int | None, record: dict | None = None):
    """Every process under ``root`` stopped for the block."""
    with Freezer(root, record) as f:
        f.stop()
        yield
