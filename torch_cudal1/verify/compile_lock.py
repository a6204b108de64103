"""While Dynamo compiles, the verifier's child lets go of the device lock.

A verification holds the device lock shared for its calls (``bench/device_lock.py``), and a
candidate's first call is where torch.compile builds it: max-autotune spends minutes there,
mostly compiling every Triton choice on the CPU. Held through that, the lock kept every other
process's timing waiting and, the turnstile giving timings preference, every other verification
behind them: in session 15's KernelBench run one task's max-autotune build (L3_18, cut off at
300 s) kept three other tasks' timings waiting 285 s each. So while Dynamo compiles, the child
holds nothing; the device work a compile does, inductor's autotune benchmarks, takes the lock
shared one benchmark at a time. A timing then waits for one benchmark, never for a whole build,
and no benchmark runs during another process's timing.
"""
from __future__ import annotations

import sys
import threading

# Dynamo's callback triggers that are compiles (cudagraph recording is device work: it keeps the lock)
_COMPILES = {"DYNAMO", "LAZY_BACKWARD"}
_BENCHMARKS = ("benchmark", "benchmark_cpu", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")

stats = {"compiles": 0, "benchmarks": 0}   # how often each happened here (for tests, reports)


def _is_compile(args) -> bool:
    trigger = getattr(args[0], "callback_trigger", None) if args else None
    return trigger is None or getattr(trigger, "name", "") in _COMPILES


def _wrap_benchmarker(lock, undo: list) -> None:
    """Inductor's autotuning times each choice through one module-level benchmarker: each of
    those timings holds the lock shared (nested in a held lock it is a no-op)."""
    mod = sys.modules.get("torch._inductor.runtime.benchmarking")
    bench = getattr(mod, "benchmarker", None)
    if bench is None or "_cudal1_locked" in vars(bench):
        return

    def unwrap() -> None:
        for n in _BENCHMARKS + ("_cudal1_locked",):
            vars(bench).pop(n, None)
    undo.append(unwrap)
    for name in _BENCHMARKS:
        fn = getattr(bench, name, None)
        if fn is None:
            continue

        def locked(*args, _fn=fn, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                return _fn(*args, **kwargs)
            stats["benchmarks"] += 1
            with lock.shared():
                return _fn(*args, **kwargs)
        setattr(bench, name, locked)
    bench._cudal1_locked = True


def install(lock):
    """Hooks Dynamo's compile start and end to suspend and resume ``lock``'s shared hold.
    Returns a function that takes the hooks out again, or None where there is nothing to hook
    (no lock, no Dynamo callbacks on this torch)."""
    if not lock.active:
        return None
    try:
        from torch._dynamo import callback_handler
    except Exception:  # noqa: BLE001 - no callbacks on this torch: the lock stays held
        return None
    undo: list = []

    def start(*args) -> None:
        if not _is_compile(args) or threading.current_thread() is not threading.main_thread():
            return
        stats["compiles"] += 1
        if "torch._inductor" in sys.modules:   # inductor is the backend: its benchmarks
            try:
                import torch._inductor.runtime.benchmarking  # noqa: F401
                _wrap_benchmarker(lock, undo)
            except Exception:  # noqa: BLE001 - a compile must not fail over the lock
                pass
        lock.suspend()

    def end(*args) -> None:
        if _is_compile(args) and threading.current_thread() is threading.main_thread():
            lock.resume()

    callback_handler.register_start_callback(start)
    callback_handler.register_end_callback(end)

    def uninstall() -> None:
        callback_handler.remove_start_callback(start)
        callback_handler.remove_end_callback(end)
        for u in undo:
            u()
    return uninstall
