"""Where a served graph's per-call host time goes: the same tiny graph through each layer a
cudal1 call crosses, from the bare ATen ops up to ``torch.compile(backend="cudal1")`` with a
cached winner, beside inductor. Microseconds per call (best of several repeats of many calls).

    PYTHONPATH=. python3 benchmarks/dispatch_layers.py [--device cpu|cuda] [--out FILE.md]

Layers:
  eager                    the Python function itself
  aten ops                 the rendered graph's ATen calls (``torch.ops.aten.*``), as a winner
                           that is the reference runs them
  dynamo, backend=forward  Dynamo's frame and guards, the FX graph's forward as the backend
  cudal1 runner            cudal1's runner called directly (its hot path and the winner)
  cudal1                   ``torch.compile(backend="cudal1")``, served from the cache
  inductor                 ``torch.compile()``
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402


def fn(x):
    return x * 2 + 1


def per_call_us(call, n: int = 5000, repeats: int = 7, sync=lambda: None) -> float:
    with torch.no_grad():
        for _ in range(200):
            call()
        sync()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            sync()
            best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def runners_of(compiled, x) -> list:
    """The GraphRunners a cudal1-compiled function made (by watching their construction)."""
    from torch_cudal1.serve import graph_runner
    made, orig = [], graph_runner.GraphRunner.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        made.append(self)
    graph_runner.GraphRunner.__init__ = init
    try:
        with torch.no_grad():
            compiled(x)
    finally:
        graph_runner.GraphRunner.__init__ = orig
    return made


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    import torch_cudal1  # noqa: F401 - registers the backend
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    x = torch.randn(8, device=args.device)
    rows = {}
    rows["eager"] = per_call_us(lambda: fn(x), sync=sync)
    mul, add = torch.ops.aten.mul.Tensor, torch.ops.aten.add.Tensor
    rows["aten ops"] = per_call_us(lambda: add(mul(x, 2), 1), sync=sync)
    torch._dynamo.reset()
    plain = torch.compile(fn, backend=lambda gm, ex: gm.forward)
    rows["dynamo, backend=forward"] = per_call_us(lambda: plain(x), sync=sync)
    torch._dynamo.reset()
    cache = tempfile.mkdtemp(prefix="cudal1-dispatch-")
    opts = {"cache_dir": cache, "engine": "builtin", "progress": False, "log_level": "warning"}
    warm = torch.compile(fn, backend="cudal1", options=opts)
    runners = runners_of(warm, x)          # searches once and caches the winner
    torch._dynamo.reset()
    served = torch.compile(fn, backend="cudal1", options=opts)
    runners = runners_of(served, x) or runners     # a cache hit
    if runners:
        r = runners[0]
        rows["cudal1 runner"] = per_call_us(lambda: r([x]), sync=sync)
    rows["cudal1"] = per_call_us(lambda: served(x), sync=sync)
    torch._dynamo.reset()
    ind = torch.compile(fn)
    rows["inductor"] = per_call_us(lambda: ind(x), sync=sync)
    origin = getattr(getattr(runners[0], "_impl", None), "origin", "?") if runners else "?"
    lines = [f"## per-call host time of `x * 2 + 1` (8 elements) on {args.device}, served winner "
             f"`{origin}`", "", "| layer | us per call |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in rows.items()]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
