"""A quiet CPU for timings: the timing thread moves to reserved cores while it holds the device.

The device lock keeps other processes' kernels off the GPU during a timing, but not their CPU
work: builds, inductor compiles and other verifications still run. A launch-bound call is mostly
host time (dispatch, guards, the launcher), so a busy host inflates exactly the calls a
compiler tries to speed up — by several times on a saturated machine. Whoever runs many
processes per host reserves cores for timings (``CUDAL1_TIMING_CPUS``, e.g. ``0`` or ``0-1``)
and keeps the other work off them (``taskset``, cgroups, or ``CUDAL1_WORK_CPUS``, which the
KernelBench runner and the warm workers apply to themselves at start). Only the calling thread moves, and only
for the timing; it moves back after. Any OS refusal leaves the thread where it is (a note in
the timing's record says so) — fairness, never correctness.

Each timing also records the thread's involuntary context switches: a direct measure of how
often the host took the CPU away during the measurement.
"""
from __future__ import annotations

import contextlib
import os
import resource

from ..options import env


def parse_cpus(spec: str | None) -> set[int]:
    """``"0-2,5"`` -> {0, 1, 2, 5}; empty or None -> empty set. Raises ValueError if malformed."""
    cpus: set[int] = set()
    for part in (spec or "").replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 0 or b < a:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(a, b + 1))
    return cpus


def _env_cpus(name: str) -> tuple[set[int], str]:
    spec = env(name) or ""
    try:
        return parse_cpus(spec), ""
    except ValueError as e:
        return set(), f"{name}={spec!r} ignored: {e}"


def apply_work_cpus() -> str:
    """Restrict this process to ``CUDAL1_WORK_CPUS`` when set (its children inherit it).
    Returns a note when the setting could not be applied, else ''."""
    cpus, note = _env_cpus("CUDAL1_WORK_CPUS")
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return note
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        return f"CUDAL1_WORK_CPUS not applied: {e}"
    return ""


def _switches(tid: int | None = None) -> int:
    """Involuntary context switches of the calling thread, or of thread ``tid`` of this process."""
    if tid is None:
        who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
        return resource.getrusage(who).ru_nivcsw
    try:
        with open(f"/proc/self/task/{tid}/status") as fh:
            for line in fh:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@contextlib.contextmanager
def timing_cpus(record: dict, threads: tuple = ()):
    """Run the body on the reserved timing CPUs (if any); fills ``record`` with what happened:
    ``timing_cpus`` (the set used, or absent), ``cpu_note`` (why not), ``involuntary_switches``,
    ``threads_moved_back`` (threads started during the body, moved off the reserved cores),
    ``load1`` (the host's one-minute load average at the end). ``threads``: native ids of other
    threads of this process that take part in the timing (a worker's candidate thread, which
    makes the calls this thread times), moved and counted with it."""
    cpus, note = _env_cpus("CUDAL1_TIMING_CPUS")
    before = None
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            before = os.sched_getaffinity(0)
            os.sched_setaffinity(0, cpus)
            for tid in threads:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(tid, cpus)
            record["timing_cpus"] = sorted(os.sched_getaffinity(0))
        except OSError as e:
            before, note = None, f"CUDAL1_TIMING_CPUS not applied: {e}"
    if note:
        record["cpu_note"] = note
    s0 = _switches() + sum(_switches(t) for t in threads)
    tids = _threads() if before is not None else set()
    try:
        yield
    finally:
        record["involuntary_switches"] = _switches() + sum(_switches(t) for t in threads) - s0
        with contextlib.suppress(OSError, AttributeError):   # how busy the rest of the host was
            record["load1"] = round(os.getloadavg()[0], 2)
        if before is not None:
            for tid in (0, *threads):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(tid, before)
            moved = _move_back(_threads() - tids, before)
            if moved:
                record["threads_moved_back"] = moved


def _threads() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return set()


def _move_back(tids: set[int], cpus: set[int]) -> int:
    """Threads started during a timing (by torch, the CUDA driver, a candidate) inherited the
    reserved cores: back to ``cpus`` with them, or they compete with every later timing in this
    process, the paired reference's right after. Returns how many moved."""
    moved = 0
    for tid in tids:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)
            moved += 1
    return moved


def _siblings(cpu: int) -> set[int]:
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as fh:
            return parse_cpus(fh.read().strip()) | {cpu}
    except (OSError, ValueError):
        return {cpu}


def plan(n_devices: int, cpus: set[int] | None = None) -> tuple[list[set[int]], set[int]]:
    """One timing set per device (a whole physical core: a hyperthread sibling left to other
    work would share the core), from the highest-numbered CPUs, and the rest for work. Raises
    ValueError when too few cores."""
    cpus = set(os.sched_getaffinity(0)) if cpus is None else set(cpus)
    timing, used = [], set()
    # from the top: the first CPUs tend to take the host's housekeeping (interrupts left on CPU 0,
    # the kernel's own threads), which preempts a timing thread kept there
    for c in sorted(cpus, reverse=True):
        if len(timing) == n_devices:
            break
        if c not in used:
            core = _siblings(c) & cpus
            timing.append(core)
            used |= core
    work = cpus - used
    if len(timing) < n_devices or not work:
        raise ValueError(f"{len(cpus)} CPUs cannot give {n_devices} timing cores and keep one "
                         f"for work")
    return timing, work


def fmt(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


if __name__ == "__main__":
    # python -m torch_cudal1.bench.timing_cpus N: one line per device (its timing CPUs), then
    # the work CPUs, for shell scripts (CUDAL1_TIMING_CPUS=..., taskset -c WORK ...).
    import sys
    t, w = plan(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    print("\n".join([fmt(s) for s in t] + [fmt(w)]))
