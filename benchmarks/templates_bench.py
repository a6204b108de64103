"""The built-in Triton templates against eager and inductor on the shapes they are offered for,
and a few around them (where they stop winning), on the current GPU. Prints a markdown table
and writes it (with JSON) under --out.

    PYTHONPATH=. python3 benchmarks/templates_bench.py   # into benchmarks/results/templates_bench/<gpu>/

Times with triton.testing.do_bench (L2 cleared between calls, median); the GB/s column counts
one read of the input and one write of the output (the copy floor), so it reads as the fraction
of the copy bandwidth each implementation reaches.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cases():
    def ln(shape, nd, dt=torch.float32):
        ns = list(shape[-nd:])
        w = torch.randn(ns, device="cuda", dtype=dt)
        b = torch.randn(ns, device="cuda", dtype=dt)
        n = 1
        for d in ns:
            n *= d
        return (lambda x: F.layer_norm(x, ns, w, b, 1e-5),
                lambda x: torch.ops.cudal1.long_row_layer_norm(x, w, b, n, 1e-5))

    def gn(shape, groups, dt=torch.float32):
        w = torch.randn(shape[1], device="cuda", dtype=dt)
        b = torch.randn(shape[1], device="cuda", dtype=dt)
        return (lambda x: F.group_norm(x, groups, w, b, 1e-5),
                lambda x: torch.ops.cudal1.long_row_group_norm(x, w, b, groups, 1e-5))

    f32, bf16 = torch.float32, torch.bfloat16
    return [
        ("layer_norm", (16, 64, 256, 256), f32, ln((16, 64, 256, 256), 3)),
        ("layer_norm", (16, 64, 256, 256), bf16, ln((16, 64, 256, 256), 3, bf16)),
        ("layer_norm", (256, 64, 32, 32), f32, ln((256, 64, 32, 32), 3)),
        ("layer_norm", (4096, 65536), f32, ln((4096, 65536), 1)),
        ("group_norm", (16, 64, 256, 256), f32, gn((16, 64, 256, 256), 8)),
        ("group_norm", (16, 64, 256, 256), bf16, gn((16, 64, 256, 256), 8, bf16)),
        ("group_norm", (32, 256, 64, 64), f32, gn((32, 256, 64, 64), 32)),
        ("group_norm", (128, 64, 32, 32), f32, gn((128, 64, 32, 32), 8)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/templates_bench/<gpu>")
    args = ap.parse_args()
    if not args.out:
        from benchmarks.paths import results_dir
        args.out = str(results_dir("templates_bench", "cuda"))
    import triton.testing
    import torch_cudal1.templates  # noqa: F401 - registers the ops

    torch.manual_seed(0)
    rows = []
    for name, shape, dtype, (ref, tmpl) in _cases():
        torch._dynamo.reset()     # one compiled function per case (the lambdas share code)
        x = (torch.randn(shape, device="cuda") * 2 + 1).to(dtype)
        impls = {"eager": ref, "inductor": torch.compile(ref, dynamic=False), "template": tmpl}
        expect = ref(x).double()
        row = {"op": name, "shape": "x".join(map(str, shape)), "dtype": str(dtype).split(".")[-1]}
        gb = 2 * x.numel() * x.element_size() / 1e9
        for k, f in impls.items():
            y = f(x)
            err = ((y.double() - expect).norm() / expect.norm()).item()
            ms = triton.testing.do_bench(lambda: f(x), warmup=25, rep=100)
            row[f"{k}_ms"] = round(ms, 4)
            row[f"{k}_GBps"] = round(gb / (ms / 1e3))
            row[f"{k}_relerr_vs_eager"] = float(f"{err:.2e}")
        row["template_vs_inductor"] = round(row["inductor_ms"] / row["template_ms"], 3)
        rows.append(row)
        print(json.dumps(row), flush=True)
    write_report(Path(args.out), "templates", "Built-in templates vs eager and inductor", rows,
                 ["op", "shape", "dtype", "eager_ms", "inductor_ms", "template_ms",
                  "template_vs_inductor", "inductor_GBps", "template_GBps"])


def write_report(out: Path, stem: str, title: str, rows: list[dict], cols: list[str]) -> None:
    """``rows`` as ``stem``.json (with the device and torch version) and as a markdown table of
    ``cols`` in ``stem``.md, which is printed too."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, indent=1))
    lines = [f"# {title} ({torch.cuda.get_device_name()})", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "-")) for c in cols) + " |" for r in rows]
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
