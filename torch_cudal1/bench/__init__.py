"""Timing harness: CUDA events with L2 flush on GPUs, perf_counter on CPUs."""
from .timing import time_callable

__all__ = ["time_callable"]
