"""What checking served winners against the user's graph (``serve_check``, serve/audit.py) costs:
the first call of a winner with the check against the same call without it, and the per-call time
after the first: no check; ``first`` with the checking wrapper left in place (the backend's runner
calls the winner itself once the check has passed, so there it costs nothing); ``100`` and ``10``
(about one call in N also runs the graph eagerly and compares).

The winner here is inductor's code for the graph (what a search's winner often is); the graphs
are a transformer MLP block, an attention block and a convolution block at one size each.

    PYTHONPATH=. python3 benchmarks/serve_check_cost.py [--device cpu|cuda] [--out FILE.md|DIR]

``--out`` a folder (as ``benchmarks/gpu/run.sh`` passes it) writes
``serve_check_cost_<device>.md`` there.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from torch_cudal1.serve.audit import Checked  # noqa: E402


def mlp(dev):
    x, w1, w2 = (torch.randn(64, 256, device=dev), torch.randn(1024, 256, device=dev) / 16,
                 torch.randn(256, 1024, device=dev) / 32)
    return (lambda x, w1, w2: (F.linear(F.gelu(F.linear(x, w1)), w2) + x,)), [x, w1, w2]


def attention(dev):
    q, k, v = (torch.randn(4, 8, 128, 64, device=dev) for _ in range(3))
    return (lambda q, k, v: (torch.softmax(q @ k.transpose(-1, -2) / 8.0, -1) @ v,)), [q, k, v]


def conv(dev):
    x, w = torch.randn(8, 32, 32, 32, device=dev), torch.randn(32, 32, 3, 3, device=dev) / 10
    return (lambda x, w: (F.relu(F.conv2d(x, w, padding=1)) + x,)), [x, w]


def _sync(dev):
    if dev.startswith("cuda"):
        torch.cuda.synchronize()


def _ms(call, dev, n=1) -> float:
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    _sync(dev)
    return (time.perf_counter() - t0) * 1e3 / n


def measure(name: str, build, dev: str, calls: int) -> dict:
    fn, xs = build(dev)
    gm = make_fx(fn)(*xs)
    winner = torch.compile(gm)
    with torch.no_grad():
        for _ in range(3):
            winner(*xs)          # compiled and warm before anything is timed

        def checked(every):
            return Checked(winner, gm, gm, every=every, precision="highest", written=set(),
                           on_mismatch=lambda why: None)
        first_plain = statistics.median(_ms(lambda: winner(*xs), dev) for _ in range(5))
        firsts = []
        for _ in range(5):
            c = checked(0)
            firsts.append(_ms(lambda: c(*xs), dev))
        row = {"graph": name, "first_plain_ms": first_plain,
               "first_checked_ms": statistics.median(firsts)}
        for label, every in (("off", None), ("first", 0), ("100", 100), ("10", 10)):
            c = winner if every is None else checked(every)
            c(*xs)               # the first call (checked where the wrapper checks)
            row[f"steady_{label}_ms"] = min(_ms(lambda: c(*xs), dev, calls) for _ in range(5))
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--out")
    a = p.parse_args()
    rows = [measure(n, b, a.device, a.calls)
            for n, b in (("mlp", mlp), ("attention", attention), ("conv", conv))]
    lines = [f"## serve_check on {a.device}: the winner is inductor's code for the graph",
             "", "| graph | first call, no check (ms) | first call, checked (ms) | per call after "
             "it: off / first / 1 in 100 / 1 in 10 (ms) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['first_plain_ms']:.3f} | {r['first_checked_ms']:.3f} | "
                     + " / ".join(f"{r[f'steady_{k}_ms']:.4f}" for k in ("off", "first", "100", "10"))
                     + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        out = Path(a.out)
        if out.is_dir() or not out.suffix:
            out = out / f"serve_check_cost_{a.device.split(':')[0]}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


if __name__ == "__main__":
    main()
