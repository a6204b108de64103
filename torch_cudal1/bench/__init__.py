"""Timing harness: CUDA events with L2 flush and device-wide sync on GPUs, perf_counter on CPUs;
optional native helpers (``native``: L2-flush kernel, C++ output checker)."""
from .timing import CheckFailed, quartiles, time_callable, time_cuda_graph

__all__ = ["time_callable", "time_cuda_graph", "quartiles", "CheckFailed"]
