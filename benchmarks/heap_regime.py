"""Timings of one code in the verifier's two processes, and glibc's heap thresholds.

    PYTHONPATH=. python3 benchmarks/heap_regime.py [--repeat 4] [--against REV]
                                                   [--out benchmarks/results/heap_regime/cpu]

The eager baseline of ``foreign_load.py``'s conv net (twelve conv + batch norm + ReLU blocks, a
MiB per activation) is verified and timed ``--repeat`` times by ``evaluate``. Each row gives the
candidate's median as the sandboxed worker timed it and the reference's median as the judge
timed it: the same code in two processes. Where glibc's malloc thresholds start low (a fresh
process), the worker unmaps and re-faults its activations on every call and the two disagree;
with the thresholds fixed for every verifier process (``torch_cudal1/verify/heap.py``) they
agree. Also the minor page faults per call of the same net in a fresh interpreter, with the
default heap and with the verifier's. ``--against REV`` measures the package at another git
revision the same way in the same run. Writes ``README.md`` and ``rows.json`` under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.foreign_load import TASK, _verify  # noqa: E402
from benchmarks.revisions import measured  # noqa: E402

FAULTS = TASK + '''

import time

def _faults():
    with open("/proc/self/stat") as f:
        s = f.read()
    return int(s[s.rfind(")") + 2:].split()[7])

m, x = Model(), get_inputs()
with torch.no_grad():
    for _ in range(3):
        m(*x)
    f0, t0 = _faults(), time.perf_counter()
    for _ in range(20):
        m(*x)
    f1, t1 = _faults(), time.perf_counter()
print((f1 - f0) / 20, (t1 - t0) / 20 * 1e3)
'''


def _fresh_process(env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout.split()
    return {"faults_per_call": round(float(out[0]), 1), "ms_per_call": round(float(out[1]), 3)}


def measure(repeat: int) -> list[dict]:
    rows = []
    for i in range(repeat):
        row = {"run": i + 1, **_verify()}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/heap_regime/cpu"))
    ap.add_argument("--repeat", type=int, default=4)
    done = measured(ap, Path(__file__), lambda a: measure(a.repeat), argv)
    if done is None:
        return 0
    args, runs = done
    head = runs[0][0]
    from torch_cudal1.verify.heap import HEAP_ENV
    fresh = {"default heap": _fresh_process({}), "the verifier's heap": _fresh_process(HEAP_ENV)}
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps(
        {"fresh_process": fresh,
         "verifications": [{"revision": rev, **r} for rev, rows in runs for r in rows]},
        indent=1) + "\n")
    command = f"PYTHONPATH=. python3 benchmarks/heap_regime.py --repeat {args.repeat}" + (
        f" --against {args.against}" if args.against else "")
    lines = ["# One code's timings in the verifier's two processes, and the heap", "",
             f"`{command}` at {head}", "",
             f"torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"{torch.get_num_threads()} torch threads. Twelve conv + batch norm + ReLU blocks on "
             "a 2x3x64x64 input (`benchmarks/foreign_load.py`'s net).", "",
             "In a fresh interpreter, 20 calls:", "",
             "| heap | minor page faults per call | ms per call |", "|---|---|---|"]
    for name, r in fresh.items():
        lines.append(f"| {name} | {r['faults_per_call']} | {r['ms_per_call']} |")
    lines += ["", "Its eager baseline verified and timed by `evaluate`: the worker's median for "
              "the candidate and the judge's for the reference, the same code. Each revision "
              "measured in the same run, one after the other.", "",
              "| package at | run | worker's timing, ms | judge's reference, ms | worker / judge "
              "| verification wall, s |", "|---|---|---|---|---|---|"]
    for rev, rows in runs:
        for r in rows:
            ratio = (r["median_ms"] / r["reference_ms"]) if r.get("reference_ms") else None
            lines.append(f"| {rev} | {r['run']} | {r.get('median_ms', '-')} | "
                         f"{r.get('reference_ms', '-')} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}'} | {r['wall_s']} |")
        ratios = [r["median_ms"] / r["reference_ms"] for r in rows if r.get("reference_ms")]
        if ratios:
            lines.append(f"| {rev} | median | | | {statistics.median(ratios):.2f} | |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
