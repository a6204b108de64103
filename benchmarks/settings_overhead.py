"""Host time per call of the wrappers that keep global settings to a module's own calls:
the built-in TF32 candidates' (``global_settings.tf32_on/off``) and ``global_settings.Scoped``
(engine code that set a global switch at import), against a bare call of the same module.

    PYTHONPATH=. python3 benchmarks/settings_overhead.py [--calls 20000] [--repeats 7]

Prints a markdown table (median over repeats of the mean per call, in microseconds). CPU only:
what is measured is Python and PyTorch's setters, the same on a GPU host.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from torch_cudal1 import global_settings
from torch_cudal1.engines.builtin import tf32
from torch_cudal1.task import load_source

INNER = '''
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
'''


# The first TF32 wrapper, which the first GPU runs with TF32 candidates used (commit 94b33fa): the legacy setter only (it
# left the per-backend setting at "ieee" where it was "none") and one nn.Module call more.
FIRST_TF32_WRAPPER = '''

_Inner = ModelNew


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Inner()

    def forward(self, *inputs):
        saved = torch.get_float32_matmul_precision()
        if saved != "highest":
            return self.inner(*inputs)
        torch.set_float32_matmul_precision("high")
        try:
            return self.inner(*inputs)
        finally:
            torch.set_float32_matmul_precision(saved)
'''


def _per_call_us(fn, x, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - t) / calls * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    bare = load_source(INNER, "cudal1_bench_bare").ModelNew()
    wrapped = load_source(tf32.wrap(INNER), "cudal1_bench_tf32").ModelNew()
    first = load_source(INNER + FIRST_TF32_WRAPPER, "cudal1_bench_first_tf32").ModelNew()
    before = global_settings.snapshot()
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
    scoped, _ = global_settings.scoped(load_source(INNER, "cudal1_bench_scoped").ModelNew(), before)
    assert global_settings.snapshot() == before
    x = torch.zeros(1)
    rows = {"bare call": bare, "TF32 wrapper (tf32_on/off)": wrapped,
            "first TF32 wrapper (commit 94b33fa)": first,
            "Scoped (one switch set at import)": scoped}
    res = {name: [] for name in rows}
    for _ in range(args.repeats):   # interleaved, so drifts of the host hit every row alike
        for name, m in rows.items():
            res[name].append(_per_call_us(m, x, args.calls))
    base = statistics.median(res["bare call"])
    print("| wrapper | us per call | over a bare call, us |")
    print("|---|---|---|")
    for name, xs in res.items():
        med = statistics.median(xs)
        print(f"| {name} | {med:.2f} | {med - base:+.2f} |")
    global_settings.apply(before)   # the first wrapper leaves "ieee" where it found "none"
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
