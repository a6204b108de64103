"""Whether the channels-last candidate pays, by dtype: every KernelBench task whose graph has a 2-D
or 3-D convolution (``spatial_convolutions`` in the CPU traces of ``trace_vs_records.py``), built
in float32 and in bfloat16, timed as the reference (NCHW) and as the built-in channels-last
candidate's own wrapper (``channels_last.wrap``: parameters converted once, inputs every call,
outputs made contiguous), each with cuDNN's autotuning off and on. The built-in engine's
``channels_last=auto`` rule comes from this table.

    PYTHONPATH=. python3 benchmarks/channels_last_cost.py --out DIR [--dtypes fp32,bf16] [--ids L1_54,...]

writes DIR/channels_last_cost.jsonl (one row per task and dtype, resumable) and
DIR/channels_last_cost.md (the table and, per dtype, the geometric mean of channels-last / NCHW).
"""
from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torch_cudal1.engines.baselines import baseline_candidate  # noqa: E402
from torch_cudal1.bench.timing import time_callable  # noqa: E402
from torch_cudal1.engines.builtin import channels_last  # noqa: E402
from torch_cudal1.task import Task, load_source  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
VARIANTS = ("nchw", "channels_last", "nchw+cudnn_benchmark", "channels_last+cudnn_benchmark")


def _alarm(*_):
    raise TimeoutError("task took over its limit")


def _cast(x, dtype, device):
    if isinstance(x, torch.Tensor):
        x = x.to(device)
        return x.to(dtype) if x.is_floating_point() else x
    return x


def measure(tid: str, source: str, dtype_name: str, device: str) -> dict:
    dtype = DTYPES[dtype_name]
    eager = baseline_candidate(Task(source, name=tid), "eager").source
    mods = {"nchw": load_source(eager, f"cudal1_clc_{tid}_nchw"),
            "channels_last": load_source(channels_last.wrap(eager), f"cudal1_clc_{tid}_cl")}
    torch.manual_seed(0)
    init = mods["nchw"].get_init_inputs()
    inputs = [[_cast(x, dtype, device) for x in mods["nchw"].get_inputs()] for _ in range(2)]
    row = {"id": tid, "dtype": dtype_name}
    for layout, mod in mods.items():
        torch.manual_seed(0)
        model = mod.ModelNew(*init).to(device=device, dtype=dtype)   # .to keeps the layout
        with torch.no_grad():
            for bench in (False, True):
                torch.backends.cudnn.benchmark = bench
                try:
                    t = time_callable(model, inputs, device, warmup=3, reps=50, budget_s=0.5)
                finally:
                    torch.backends.cudnn.benchmark = False
                row[layout + ("+cudnn_benchmark" if bench else "")] = round(t.median_ms, 5)
        del model
    return row


def ratio(row: dict, variant: str) -> float | None:
    a, b = row.get(variant), row.get("nchw")
    return a / b if a and b else None


def table(rows: list[dict]) -> str:
    lines = ["| task | dtype | " + " | ".join(f"{v} ms" for v in VARIANTS) + " | best / nchw |",
             "|---|---|" + "---|" * (len(VARIANTS) + 1)]
    for r in sorted(rows, key=lambda r: (r["dtype"], r["id"])):
        if "error" in r:
            lines.append(f"| {r['id']} | {r['dtype']} | {r['error']} |" + " |" * len(VARIANTS))
            continue
        best = min(r[v] for v in VARIANTS) / r["nchw"]
        lines.append(f"| {r['id']} | {r['dtype']} | " + " | ".join(f"{r[v]:.4f}" for v in VARIANTS)
                     + f" | {best:.3f} |")
    lines.append("")
    for dt in DTYPES:
        ok = [r for r in rows if r["dtype"] == dt and "error" not in r]
        if not ok:
            continue
        for v in VARIANTS[1:]:
            rs = [ratio(r, v) for r in ok]
            gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
            wins = sum(x < 0.95 for x in rs)
            lines.append(f"{dt}, {v} / nchw over {len(rs)} tasks: geometric mean {gm:.3f}, "
                         f"under 0.95 on {wins}")
        cl_best = [min(r["channels_last"], r["channels_last+cudnn_benchmark"])
                   / min(r["nchw"], r["nchw+cudnn_benchmark"]) for r in ok]
        lines.append(f"{dt}, best channels-last / best NCHW: geometric mean "
                     f"{math.exp(sum(map(math.log, cl_best)) / len(cl_best)):.3f}, "
                     f"under 0.95 on {sum(x < 0.95 for x in cl_best)} of {len(cl_best)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the jsonl and the markdown table")
    ap.add_argument("--data", default=str(ROOT / ".carry/kernelbench/cudal1_h100_dev.jsonl"))
    ap.add_argument("--traces", default=str(ROOT / "benchmarks/results/trace_vs_records/cpu/trace_vs_records_cpu.jsonl"))
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--ids", default="", help="these tasks only (default: all with 2-D/3-D convolutions)")
    ap.add_argument("--task-s", type=int, default=40, help="seconds per task and dtype")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "channels_last_cost.jsonl"
    ids = [i for i in args.ids.split(",") if i] or [
        r["id"] for r in map(json.loads, Path(args.traces).read_text().splitlines())
        if r.get("spatial_convolutions")]
    sources = {f"L{r['level_id']}_{r['task_id']}": r["ref_code"]
               for r in map(json.loads, Path(args.data).read_text().splitlines())}
    done = {(r["id"], r["dtype"]) for r in map(json.loads, jsonl.read_text().splitlines())} \
        if jsonl.exists() else set()
    signal.signal(signal.SIGALRM, _alarm)
    with jsonl.open("a") as f:
        for dt in args.dtypes.split(","):
            for tid in ids:
                if (tid, dt) in done or tid not in sources:
                    continue
                signal.alarm(args.task_s)
                try:
                    row = measure(tid, sources[tid], dt, args.device)
                except Exception as e:  # noqa: BLE001 - a task that fails is a row, not a stop
                    row = {"id": tid, "dtype": dt, "error": f"{type(e).__name__}: {str(e)[:120]}"}
                finally:
                    signal.alarm(0)
                    if args.device.startswith("cuda"):
                        torch.cuda.empty_cache()
                print(json.dumps(row), flush=True)
                f.write(json.dumps(row) + "\n")
                f.flush()
    rows = [json.loads(x) for x in jsonl.read_text().splitlines()]
    md = table(rows)
    (out / "channels_last_cost.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
