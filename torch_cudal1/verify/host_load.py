"""CPU time the host spent on other work while the judge timed a batch.

The judge's clock cross-check (``Judge._cross_check``) asks whether a candidate's reported times
account for the wall time its batch took. On a host where other processes compete for the cores
(a compiler building the next candidate, another test), the wall time grows with waits the
candidate's times rightly leave out, and an honest candidate would look as if it had edited them.
The kernel's own accounting tells the two apart: the CPU time all processes spent (``/proc/stat``)
less what this judge and every process of the candidate's sandbox spent (``/proc/<pid>/stat`` of
the sandbox's whole process tree, read at the moment) is what others took. The candidate cannot
change either figure; processes it starts are in its tree, so their work counts as its own.
"""
from __future__ import annotations

import os

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _host_busy_ticks() -> int | None:
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait
    vals = [int(x) for x in fields[:8]]
    return sum(vals) - vals[3] - vals[4]


def _tree_ticks(root: int) -> int:
    """utime + stime of ``root`` and all its descendants (with their reaped children's)."""
    parent, ticks = {}, {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rfind(b")") + 2:].split()   # the name may hold spaces and brackets
        pid = int(name)
        parent[pid] = int(rest[1])
        ticks[pid] = sum(int(x) for x in rest[11:15])   # utime stime cutime cstime
    total, todo = 0, [root]
    children: dict[int, list[int]] = {}
    for pid, pp in parent.items():
        children.setdefault(pp, []).append(pid)
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


class OthersClock:
    """``start()`` before a batch, ``others_s()`` after: seconds of CPU that processes other than
    this one and the tree under ``root`` used meanwhile (``None`` where ``/proc`` is missing)."""

    def __init__(self, root: int | None):
        self.root = root
        self.mark = None

    def _now(self):
        host = _host_busy_ticks()
        if host is None or self.root is None:
            return None
        t = os.times()
        own = (t.user + t.system) * _HZ
        return host, own + _tree_ticks(self.root)

    def start(self) -> None:
        self.mark = self._now()

    def others_s(self) -> float | None:
        end = self._now()
        if end is None or self.mark is None:
            return None
        (h0, o0), (h1, o1) = self.mark, end
        return max(0.0, ((h1 - h0) - (o1 - o0)) / _HZ)
