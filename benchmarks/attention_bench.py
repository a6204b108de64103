"""The float32 attention template in TF32 (``torch.ops.cudal1.attention_tf32``), and at float32's
precision with its products split in three TF32 ones (``attention_3xtf32``, column ``split``),
against ATen's float32 attention (eager and inductor), and against the fp16 FlashAttention call
CUDA-L1's solutions make (L3_31: cast to fp16 under autocast), on the current GPU. Prints a
markdown table and writes it (with JSON) under --out.

    PYTHONPATH=. python3 benchmarks/attention_bench.py   # into benchmarks/results/attention_bench/<gpu>/

Times with triton.testing.do_bench (median). ``relerr`` is the norm-relative error against
float64 attention: the verifier's float32 tolerance is 1e-4 at PyTorch's default precision
(``"highest"``), 1e-3 at ``"high"`` (``verify/compare.py``). A second
table (``attention_tiles``) gives triton.autotune's time for each of the template's tiles per
shape (``BLOCK_M x BLOCK_N, warps, stages``; ``-`` where a tile did not fit): what to keep in
``CONFIGS``.
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
from benchmarks.paths import results_dir  # noqa: E402
from benchmarks.templates_bench import write_report  # noqa: E402

# (batch, heads, query length, key length, head dim, causal, mask): L3_31's shape first
CASES = [(2, 4, 16384, 16384, 32, False, None), (8, 12, 1024, 1024, 64, False, None),
         (8, 12, 1024, 1024, 64, True, None), (4, 16, 2048, 2048, 128, False, None),
         (16, 8, 512, 512, 64, False, "causal-bool"), (32, 12, 197, 197, 64, False, None)]


def _mask(kind, length, device):
    if kind == "causal-bool":   # minGPT's: a lower-triangular buffer, as the fused rewrite leaves it
        return torch.ones(length, length, device=device, dtype=torch.bool).tril()[None, None]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/attention_bench/<gpu>")
    args = ap.parse_args()
    args.out = args.out or str(results_dir("attention_bench", "cuda"))
    import triton.testing
    import torch_cudal1.templates  # noqa: F401 - registers the ops

    from torch_cudal1.templates import attention_tf32 as template_module

    torch.manual_seed(0)
    rows, tiles = [], []
    for b, h, lq, lk, e, causal, kind in CASES:
        torch._dynamo.reset()
        q = torch.randn(b, h, lq, e, device="cuda")
        k, v = (torch.randn(b, h, lk, e, device="cuda") for _ in range(2))
        m = _mask(kind, lq, "cuda")
        sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, m, is_causal=causal)  # noqa: E731

        def fp16(q, k, v):
            return sdpa(q.half(), k.half(), v.half()).float()

        def split(q, k, v):
            return torch.ops.cudal1.attention_3xtf32(q, k, v, m, None, causal, [0, 1, 2, 3])

        def template(q, k, v):
            return torch.ops.cudal1.attention_tf32(q, k, v, m, None, causal, [0, 1, 2, 3])

        # the TF32 template last: the tile table reads its autotuner's last choice
        impls = {"eager": sdpa, "inductor": torch.compile(sdpa, dynamic=False), "fp16": fp16,
                 "split": split, "template": template}
        expect = sdpa(q.double(), k.double(), v.double())
        row = {"shape": f"{b}x{h}x{lq}x{lk}x{e}", "causal": causal, "mask": kind or "-"}
        for name, f in impls.items():
            try:
                y = f(q, k, v)
                row[f"{name}_relerr"] = float(f"{((y.double() - expect).norm() / expect.norm()).item():.2e}")
                row[f"{name}_ms"] = round(triton.testing.do_bench(lambda: f(q, k, v), warmup=25, rep=100), 4)
            except Exception as exc:  # noqa: BLE001 - a failing implementation is a row's finding
                row[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        for name in ("template", "split"):
            if row.get(f"{name}_ms") and row.get("inductor_ms"):
                row[f"{name}_vs_inductor"] = round(row["inductor_ms"] / row[f"{name}_ms"], 3)
        tuned = (template_module._KERNEL or (None, None))[1]
        if getattr(tuned, "best_config", None) is not None:
            row["template_tile"] = _tile(tuned.best_config)
            tile_row = {"shape": row["shape"], "causal": causal, "mask": row["mask"]}
            for config, ms in (getattr(tuned, "configs_timings", None) or {}).items():
                ms = ms[0] if isinstance(ms, (list, tuple)) else ms
                tile_row[_tile(config)] = round(ms, 4) if ms != float("inf") else "-"
            tiles.append(tile_row)
        rows.append(row)
        print(json.dumps(row), flush=True)
    write_report(Path(args.out), "attention", "float32 attention: the templates (TF32, and split "
                 "in three TF32 products) vs ATen", rows,
                 ["shape", "causal", "mask", "eager_ms", "inductor_ms", "fp16_ms", "template_ms",
                  "template_vs_inductor", "split_ms", "split_vs_inductor", "template_tile",
                  "eager_relerr", "fp16_relerr", "template_relerr", "split_relerr"])
    if tiles:
        write_report(Path(args.out), "attention_tiles", "the template's tiles, as triton.autotune "
                     "timed them (ms)", tiles, ["shape", "causal", "mask"]
                     + [_tile_name(*c) for c in template_module.CONFIGS])


def _tile_name(m: int, n: int, warps: int, stages: int) -> str:
    return f"{m}x{n} w{warps} s{stages}"


def _tile(config) -> str:
    return _tile_name(config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"], config.num_warps,
                      config.num_stages)

if __name__ == "__main__":
    main()
