"""Timing of a callable over rotating input sets.

GPU: CUDA events around each call, the L2 flushed before it, the end event recorded after a
device-wide synchronisation so that work left on side streams is counted. CPU: perf_counter.
Warm-up first; repetitions until the budget or the count is reached; median and inter-quartile
spread.
"""
from __future__ import annotations

import statistics
import time

import torch

from ..contracts import Timing


def _quartiles(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 4:
        return statistics.median(xs), (max(xs) - min(xs)) if xs else 0.0
    q = statistics.quantiles(xs, n=4)
    return q[1], q[2] - q[0]


def time_callable(fn, input_sets: list[list], device: str = "cpu", *, warmup: int = 3,
                  reps: int = 50, budget_s: float = 2.0, min_reps: int = 5) -> Timing:
    """Median milliseconds of ``fn(*inputs)``, rotating through ``input_sets``."""
    cuda = device.startswith("cuda")
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    if cuda:
        torch.cuda.synchronize()
        flush = torch.empty(int(256 * 2**20) // 4, dtype=torch.int32, device=device)
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    i = 0
    while i < reps and (i < min_reps or time.perf_counter() < deadline):
        inputs = input_sets[i % len(input_sets)]
        if cuda:
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            torch.cuda.synchronize()   # counts work left on other streams
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(*inputs)
            samples.append((time.perf_counter() - t0) * 1e3)
        i += 1
    median, spread = _quartiles(samples)
    return Timing(median_ms=median, spread_ms=spread, n=len(samples),
                  method="cuda_events_l2flush" if cuda else "cpu_perf_counter")
