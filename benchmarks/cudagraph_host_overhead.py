"""Host time per call of the built-in CUDA-graph wrapper's replay path, against what any replay
must do (copy the inputs in, clone the output) and against calling the op directly.

Launch-bound graphs (KernelBench's 0.03-0.1 ms tasks) pay this on every call, so it is measured
on its own: CPU tensors, the graph's replay stubbed out (no GPU needed), everything else the real
per-call path (signature check, input plan, copies, fresh outputs).

    PYTHONPATH=. python3 benchmarks/cudagraph_host_overhead.py [--inputs 2] [--numel 4] [--against REV]

``--against REV`` adds the wrapper as it was at git revision REV, timed in turns with today's.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.utils._pytree as pytree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from torch_cudal1.engines.builtin import cudagraph  # noqa: E402


class _StubGraph:
    def replay(self):
        pass


def wrapper_at(rev: str):
    """The wrapper module as it was at git revision ``rev``."""
    root = Path(__file__).resolve().parents[1]
    d = Path(tempfile.mkdtemp(prefix="cudal1-wrapper-"))
    for name in ("cudagraph.py", "graph_inputs.py"):
        src = subprocess.run(["git", "show", f"{rev}:torch_cudal1/engines/builtin/{name}"],
                             cwd=root, capture_output=True, text=True, check=True).stdout
        (d / name).write_text(src)
    spec = importlib.util.spec_from_file_location(f"cudagraph_at_{rev}", d / "cudagraph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def wrapped(n_inputs: int, numel: int, module=cudagraph):
    """A wrapped ``ModelNew`` summing its inputs, left as a capture leaves it."""
    names = ", ".join(f"x{i}" for i in range(n_inputs))
    src = ("import torch\n\n\nclass ModelNew(torch.nn.Module):\n"
           f"    def forward(self, {names}):\n        return {' + '.join(names.split(', '))}\n")
    ns = {"__name__": "cudal1_overhead_bench"}
    exec(compile(module.wrap(src), "<wrapped>", "exec"), ns)  # our own template
    m = ns["ModelNew"]()
    static = [torch.randn(numel) for _ in range(n_inputs)]
    out = m.inner(*static)
    leaves, _ = pytree.tree_flatten(out)
    m._plan.settled, m._plan.copied = True, tuple(range(n_inputs))
    single = "spec is None" in module.WRAPPER   # older wrappers (--against) always unflatten
    m._cg = (_StubGraph(), static, leaves, None if single else pytree.tree_flatten(out)[1],
             n_inputs, m._sig(static, m._plan.copied), m._plan.copied)
    return m, static, leaves


def per_call_us(fn, sets, n: int) -> float:
    for i in range(500):
        fn(*sets[i % len(sets)])
    t0 = time.perf_counter()
    for i in range(n):
        fn(*sets[i % len(sets)])
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=2)
    ap.add_argument("--numel", type=int, default=4)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--against", metavar="REV", help="also the wrapper at this git revision")
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    m, static, leaves = wrapped(args.inputs, args.numel)
    sets = [[torch.randn(args.numel) for _ in range(args.inputs)] for _ in range(3)]

    def floor(*xs):   # what any replay must do on the host
        for s, x in zip(static, xs):
            s.copy_(x)
        return leaves[0].clone()

    def bare(*xs):
        return m.inner(*xs)
    rows = {"wrapper replay path": m, "copies in + clone out": floor, "the op itself": bare}
    if args.against:
        rows[f"wrapper replay path at {args.against}"] = wrapped(
            args.inputs, args.numel, wrapper_at(args.against))[0]
    times: dict = {name: [] for name in rows}
    for _ in range(args.repeats):   # in turns, so a drifting host biases none of them
        for name, fn in rows.items():
            times[name].append(per_call_us(fn, sets, args.calls))
    print(f"| path | host us per call (median of {args.repeats}; {args.inputs} inputs of "
          f"{args.numel} elements, CPU) |")
    print("|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
