"""CPU time the host spent on other work while the judge timed a batch.

The judge's clock cross-check (``Judge._cross_check``) asks whether a candidate's reported times
account for the wall time its batch took. On a host where other processes compete for the cores
(a compiler building the next candidate, another test), the wall time grows with waits the
candidate's times rightly leave out, and an honest candidate would look as if it had edited them.
The kernel's own accounting tells the two apart: the CPU time all processes spent (``/proc/stat``)
less what this judge and every process of the candidate's sandbox spent (``/proc/<pid>/stat`` of
the sandbox's whole process tree, read at the moment) is what others took. The candidate cannot
change either figure; processes it starts are in its tree, so their work counts as its own.

The same process table tells the judge whether the candidate is building (a compiler in its
tree): a first call that compiles lazily is given the verification's whole limit, not the
allowance in proportion to the reference's time (``compiler_running``).
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


def _proc_table() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (parent pid, utime + stime + cutime + cstime, command name) of every process."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        comm = data[data.find(b"(") + 1:data.rfind(b")")]
        rest = data[data.rfind(b")") + 2:].split()   # the name may hold spaces and brackets
        table[int(name)] = (int(rest[1]), sum(int(x) for x in rest[11:15]), comm)
    return table


def _tree(root: int, table: dict) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (pp, _, _) in table.items():
        children.setdefault(pp, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _tree_ticks(root: int) -> int:
    """utime + stime of ``root`` and all its descendants (with their reaped children's)."""
    table = _proc_table()
    return sum(table[pid][1] for pid in _tree(root, table))


# Executables of the builds a candidate may run lazily in its first calls (torch's cpp_extension
# through ninja, nvcc and the host compiler; Triton's ptxas; inductor's C++ compiles).
COMPILERS = frozenset({b"ninja", b"nvcc", b"cicc", b"ptxas", b"fatbinary", b"nvlink", b"cudafe++",
                       b"gcc", b"g++", b"cc", b"c++", b"cc1", b"cc1plus", b"as", b"ld", b"collect2",
                       b"clang", b"clang++", b"x86_64-linux-gn", b"ld.gold", b"ld.bfd"})   # (15-byte names)


def compiler_running(root: int | None) -> bool:
    """Whether a compiler runs in the process tree under ``root`` now (read from ``/proc``)."""
    if root is None:
        return False
    table = _proc_table()
    return any(table[pid][2] in COMPILERS for pid in _tree(root, table) if pid != root)


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
