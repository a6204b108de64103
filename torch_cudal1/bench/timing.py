"""Timing of a callable over rotating input sets.

GPU: per iteration the L2 cache is flushed (a buffer twice the L2 size is overwritten), then
``start`` is recorded, the callable runs, ``end_events`` is recorded on the current stream, the
whole device is synchronised and ``end_synced`` is recorded. ``end_synced`` counts work the
callable left on side streams, so it is the reported time; the plain event time is kept in
``extra["events_ms"]`` and a large gap between the two is a sign of asynchronous work. CPU:
``perf_counter`` around the call. Both: warm-up, then repetitions until the inter-quartile spread
is within ``rel_spread`` of the median (or the count/time budget runs out); median and IQR.

Where the native helpers are built (``bench/native.py``), each timed call goes through them: the
clock (CPU) or the CUDA events and the synchronisation (GPU) are driven from C++, where a
candidate that patches ``time.perf_counter`` or ``torch.cuda.Event`` cannot reach them.

``check(index, output)`` is called (outside the timed region) on a few randomly chosen iterations,
so that a candidate cannot behave during verification and cheat while it is timed; an untimed
call follows each check.
"""
from __future__ import annotations

import random
import statistics
import time

import torch

from ..contracts import Timing


class CheckFailed(Exception):
    """Raised by a ``check`` callback during timing; carries (reason, detail)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def quartiles(xs: list[float]) -> tuple[float, float]:
    """(median, inter-quartile range)."""
    if not xs:
        return 0.0, 0.0
    if len(xs) < 4:
        return statistics.median(xs), max(xs) - min(xs)
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[1], q[2] - q[0]


def _l2_bytes(device) -> int:
    try:
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
    except Exception:  # noqa: BLE001
        l2 = 0
    return max(2 * l2, 64 * 2**20) if l2 else 256 * 2**20


class L2Flusher:
    """Overwrites a buffer larger than the L2 cache (native kernel when built, else ``fill_``)."""

    def __init__(self, device):
        self.buf = torch.empty(_l2_bytes(device) // 4, dtype=torch.int32, device=device)
        self.native = None
        try:
            from . import native
            self.native = native.load(optional=True)
        except Exception:  # noqa: BLE001 - the Python path is always there
            self.native = None
        self._i = 0

    def next_value(self) -> int:
        self._i += 1
        return self._i

    def __call__(self) -> None:
        self._i += 1
        if self.native is not None and hasattr(self.native, "flush_l2"):
            self.native.flush_l2(self.buf, self._i)
        else:
            self.buf.fill_(self._i)


def _native_clock(cuda: bool):
    """The native helpers when built with a timed-call entry point for this device (their clock
    and events are out of the candidate's Python reach), else None: the Python loop below."""
    try:
        from . import native
        mod = native.load(optional=True)
    except Exception:  # noqa: BLE001 - the Python path is always there
        return None
    if mod is None or not hasattr(mod, "time_call_cuda" if cuda else "time_call_cpu"):
        return None
    return mod


def _pick_checks(total_hint: int, n_checks: int, rng: random.Random) -> set[int]:
    if n_checks <= 0:
        return set()
    return set(rng.sample(range(total_hint), min(n_checks, total_hint)))


def time_callable(fn, input_sets: list[list], device: str = "cpu", *, warmup: int = 3,
                  reps: int = 200, min_reps: int = 10, budget_s: float = 2.0,
                  rel_spread: float = 0.05, check=None, n_checks: int = 3,
                  cuda_graph: bool = False, flush_l2: bool = True, before=None) -> Timing:
    """Median milliseconds of ``fn(*inputs)``, rotating through ``input_sets``.

    ``before()``, when given, runs ahead of every call, outside the timed region (a stateful
    task's state put back). Raises ``CheckFailed`` when ``check`` rejects an output seen during
    timing."""
    cuda = str(device).startswith("cuda")
    rng = random.Random()
    for i in range(warmup):
        if before is not None:
            before()
        fn(*input_sets[i % len(input_sets)])
    checks = _pick_checks(max(min_reps, 1), n_checks, rng) if check else set()
    samples: list[float] = []
    unsynced: list[float] = []
    flusher = None
    if cuda:
        torch.cuda.synchronize()
        flusher = L2Flusher(device) if flush_l2 else None
    clock = _native_clock(cuda)
    no_flush = torch.empty(0, dtype=torch.int32, device=device) if clock and cuda else None
    deadline = time.perf_counter() + budget_s
    i = 0
    while i < reps:
        inputs = input_sets[i % len(input_sets)]
        if before is not None:
            before()
        if cuda and clock is not None:
            out, synced_ms, events_ms = clock.time_call_cuda(
                fn, tuple(inputs), flusher.buf if flusher is not None else no_flush,
                flusher.next_value() if flusher is not None else 0)
            samples.append(synced_ms)
            unsynced.append(events_ms)
        elif clock is not None:
            out, ms = clock.time_call_cpu(fn, tuple(inputs))
            samples.append(ms)
        elif cuda:
            if flusher is not None:
                flusher()
            start = torch.cuda.Event(enable_timing=True)
            end_events = torch.cuda.Event(enable_timing=True)
            end_synced = torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn(*inputs)
            end_events.record()
            torch.cuda.synchronize()   # every stream: work left on side streams is counted
            end_synced.record()
            end_synced.synchronize()
            samples.append(start.elapsed_time(end_synced))
            unsynced.append(start.elapsed_time(end_events))
        else:
            t0 = time.perf_counter()
            out = fn(*inputs)
            samples.append((time.perf_counter() - t0) * 1e3)
        if i in checks:
            check(i % len(input_sets), out)
            del out
            # The check ran the reference (in float64 too): its blocks now fill the allocator's
            # cache and the CPU caches. One untimed call puts the candidate's working set back,
            # so the next sample is steady state (an 8 GiB-output task's eager time doubled
            # when cudaMalloc had to free the reference's blocks inside a timed call).
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            if before is not None:
                before()
            fn(*inputs)
            if cuda:
                torch.cuda.synchronize()
        else:
            del out
        i += 1
        if i >= min_reps:
            med, iqr = quartiles(samples)
            if (med > 0 and iqr <= rel_spread * med and i >= 2 * min_reps) or \
                    time.perf_counter() > deadline:
                break
    median, spread = quartiles(samples)
    extra = {"min_ms": min(samples), "mean_ms": statistics.fmean(samples),
             "input_sets": len(input_sets), "checks": len(checks),
             "clock": "native" if clock is not None else "python"}
    if cuda:
        extra["events_ms"] = quartiles(unsynced)[0]
        extra["l2_flush_bytes"] = flusher.buf.numel() * 4 if flusher is not None else 0
        extra["l2_flush"] = ("native" if flusher and flusher.native is not None else "torch") \
            if flusher else "off"
        if cuda_graph:
            g = time_cuda_graph(fn, input_sets[0])
            if g is not None:
                extra["cuda_graph_ms"] = g
    return Timing(median_ms=median, spread_ms=spread, n=len(samples),
                  method="cuda_events_l2flush_synced" if cuda else "cpu_perf_counter", extra=extra)


def _clear_cublas_workspaces() -> None:
    """cuBLAS caches one workspace per stream outside any graph's memory; emptied around a
    capture, the graph allocates its own (as the built-in CUDA-graph wrapper does, and
    torch.compile's cudagraph trees)."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()


def time_cuda_graph(fn, inputs: list, replays: int = 20, graphs_per_sample: int = 10) -> float | None:
    """Milliseconds per call when ``fn`` is captured once into a CUDA graph and replayed (what a
    launch-bound graph costs under ``mode="reduce-overhead"``). None when it cannot be captured."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        _clear_cublas_workspaces()   # the capture's matrix products get a workspace of its own
        try:
            with torch.cuda.graph(g):
                fn(*inputs)
        finally:
            _clear_cublas_workspaces()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(graphs_per_sample):
                g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / graphs_per_sample)
        torch.cuda.synchronize()
        return quartiles(times)[0]
    except Exception:  # noqa: BLE001 - not capturable (host sync, allocation, CPU ops)
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
        return None
