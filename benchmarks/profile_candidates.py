"""Where the time of the built-in engine's candidates goes, kernel by kernel: for KernelBench tasks,
the baselines (eager, inductor) and each first-round candidate whose origin holds ``--match``,
run under torch.profiler after warm-up. Per candidate: its time per call (triton.testing.do_bench
on a GPU) and its kernels by device time per call, as a markdown table (printed, and written
with JSON under --out). Trusted code only: the engine's own candidates and the tasks' references.

    PYTHONPATH=. python3 benchmarks/profile_candidates.py --ids L3_31 --match attention_tf32
    PROFILE_IDS=L3_31 PROFILE_MATCH=attention_tf32 SCRIPTS=benchmarks/profile_candidates.py \\
        bash benchmarks/gpu/run.sh                        # among other GPU steps
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torch_cudal1 import global_settings  # noqa: E402
from torch_cudal1.engines.baselines import baseline_candidate  # noqa: E402
from torch_cudal1.engines.base import SearchContext  # noqa: E402
from torch_cudal1.engines.builtin import BuiltinEngine  # noqa: E402
from torch_cudal1.options import Options  # noqa: E402
from torch_cudal1.task import Task, load_source  # noqa: E402

CALLS = 5   # profiled calls per candidate, after WARM ones (compiles, autotuning)
WARM = 3
TOP = 12    # kernels listed per candidate


def _tasks(data: Path, ids: list[str]) -> dict[str, Task]:
    tasks = {}
    for line in data.read_text().splitlines():
        row = json.loads(line)
        tid = f"L{row['level_id']}_{row['task_id']}"
        if tid in ids:
            tasks[tid] = Task(source=row["ref_code"], name=tid)
    return tasks


def _module(source: str, name: str, init, device: str, cls: str):
    mod = load_source(source, name)
    torch.manual_seed(0)
    model = getattr(mod, cls)(*init)
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    # settings its import or construction changed hold during its calls only, as when served
    return global_settings.scoped(model, global_settings.snapshot())[0]


def _call_ms(fn, device: str) -> float:
    if device.startswith("cuda"):
        import triton.testing
        return triton.testing.do_bench(fn, warmup=25, rep=100)
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - t0) * 1e3 / CALLS


def profile(fn, device: str) -> list[dict]:
    """The kernels of CALLS calls of ``fn``, by device time per call (on CPU: the ops)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(CALLS):
            fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    want = DeviceType.CUDA if device.startswith("cuda") else DeviceType.CPU
    us, count = defaultdict(float), defaultdict(int)
    for e in prof.events():
        if e.device_type == want and (want == DeviceType.CUDA or e.cpu_parent is None):
            us[e.name] += e.time_range.elapsed_us()
            count[e.name] += 1
    rows = [{"kernel": name[:90], "ms_per_call": round(t / CALLS / 1e3, 4),
             "launches_per_call": round(count[name] / CALLS, 2)} for name, t in us.items()]
    return sorted(rows, key=lambda r: -r["ms_per_call"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("CUDAL1_KERNELBENCH",
                                                     ".carry/kernelbench/cudal1_h100_dev.jsonl"))
    # defaults from the environment: benchmarks/gpu/run.sh passes scripts --out alone
    ap.add_argument("--ids", default=os.environ.get("PROFILE_IDS"),
                    help="comma-separated KernelBench ids, e.g. L3_31 (env PROFILE_IDS)")
    ap.add_argument("--match", default=os.environ.get("PROFILE_MATCH", ""),
                    help="profile candidates whose origin holds this (env PROFILE_MATCH)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--baselines", default="eager,inductor",
                    help="baselines profiled first (comma-separated; empty: none)")
    ap.add_argument("--samples", type=int, default=8, help="first-round candidates asked for")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/profile_candidates/<gpu>")
    args = ap.parse_args(argv)
    if not args.ids:
        ap.error("--ids (or PROFILE_IDS) is required")
    from benchmarks.paths import results_dir
    out = Path(args.out or results_dir("profile_candidates", args.device))
    out.mkdir(parents=True, exist_ok=True)
    report, lines = {}, []
    for tid, task in _tasks(Path(args.data), args.ids.split(",")).items():
        ref_mod = task.load()
        init = ref_mod.get_init_inputs()
        inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x
                  for x in ref_mod.get_inputs()]
        cands = [(f"baseline:{b}", baseline_candidate(task, b).source, "ModelNew")
                 for b in args.baselines.split(",") if b]
        engine = BuiltinEngine(Options.resolve({}))
        cands += [(c.origin, c.source, "ModelNew") for c in engine.propose(
            task, [], SearchContext(device=args.device, round=1, samples=args.samples))
            if args.match in c.origin]
        for i, (origin, source, cls) in enumerate(cands):
            try:
                model = _module(source, f"cudal1_profiled_{tid}_{i}", init, args.device, cls)
                with torch.no_grad():
                    for _ in range(WARM):
                        model(*inputs)
                    ms = _call_ms(lambda: model(*inputs), args.device)
                    kernels = profile(lambda: model(*inputs), args.device)
            except Exception as e:  # noqa: BLE001 - a candidate that fails here is a finding
                report[f"{tid} {origin}"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
                lines += [f"## {tid} `{origin}`: {type(e).__name__}: {str(e)[:300]}", ""]
                continue
            report[f"{tid} {origin}"] = {"ms": round(ms, 4), "kernels": kernels}
            lines += [f"## {tid} `{origin}`: {ms:.4f} ms per call", "",
                      "| kernel | ms per call | launches per call |", "|---|---|---|"]
            lines += [f"| `{k['kernel']}` | {k['ms_per_call']} | {k['launches_per_call']} |"
                      for k in kernels[:TOP]]
            lines.append("")
            print("\n".join(lines[-(len(kernels[:TOP]) + 5):]), flush=True)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    (out / "profile.json").write_text(json.dumps({"device": device, "torch": torch.__version__,
                                                  "candidates": report}, indent=1))
    (out / "profile.md").write_text(f"# Candidates' kernels ({device})\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
