"""A candidate that slows the reference: threads that burn the cores whenever its own calls are
idle, that is while the judge times the reference in its own process. Verified with the
reference paired (``cudal1 verify --speedup``) beside an honest candidate of the same product;
since the judge stops the candidate's processes while it times the reference
(``verify/freeze.py``), the burner's reference should time as the honest one's does.

    PYTHONPATH=. python3 benchmarks/idle_burner.py [--repeat 3] [--against REV]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.revisions import measured  # noqa: E402

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]


def get_init_inputs():
    return []
'''

HONEST = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a @ b
'''

BURNER = '''
import hashlib
import threading
import time

import torch.nn as nn

_last = [time.perf_counter()]
_busy = [False]
_blob = b"x" * (1 << 16)


def _burn():
    # hashlib releases the GIL: a core each, whenever no call of ours ran for 5 ms
    while True:
        if _busy[0] or time.perf_counter() - _last[0] < 0.005:
            time.sleep(0.0005)
            continue
        for _ in range(8):
            hashlib.sha256(_blob).digest()


for _ in range(2):
    threading.Thread(target=_burn, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, a, b):
        _busy[0] = True
        try:
            return a @ b
        finally:
            _last[0] = time.perf_counter()
            _busy[0] = False
'''


def _verify(source: str) -> dict:
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    verdict, timing = evaluate(Task(TASK, name="matmul256"),
                               Candidate(source, origin="openai:r1s0"), timeout_s=120,
                               pair_reference=True)
    if timing is None:
        return {"verdict": verdict.reason}
    ref = timing.extra.get("paired_ref_ms")
    return {"verdict": verdict.reason, "median_ms": round(timing.median_ms, 4),
            "reference_ms": round(ref, 4) if ref else None,
            "speedup": round(ref / timing.median_ms, 3) if ref else None}


def measure(repeat: int) -> list[dict]:
    rows = []
    for i in range(repeat):
        for name, src in (("honest", HONEST), ("burner", BURNER)):
            row = {"run": i + 1, "candidate": name, **_verify(src)}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/idle_burner/cpu"))
    ap.add_argument("--repeat", type=int, default=3)
    done = measured(ap, Path(__file__), lambda a: measure(a.repeat), argv)
    if done is None:
        return 0
    args, runs = done
    head = runs[0][0]
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps(
        [{"revision": rev, **r} for rev, rows in runs for r in rows], indent=1) + "\n")
    command = f"PYTHONPATH=. python3 benchmarks/idle_burner.py --repeat {args.repeat}" + (
        f" --against {args.against}" if args.against else "")
    lines = ["# A candidate that burns the cores while the judge times the reference", "",
             f"`{command}` at {head}", "",
             f"torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} CPUs. A 256x256 "
             "float32 product; `cudal1 verify --speedup`'s figures (the reference timed by the "
             "judge between the candidate's batches). Each revision measured in the same run, "
             "one after the other.", "",
             "| package at | candidate | runs | reference, ms (median of runs) | candidate, ms "
             "| speedup over the reference |", "|---|---|---|---|---|---|"]
    for rev, rows in runs:
        for name in ("honest", "burner"):
            rs = [r for r in rows if r["candidate"] == name and r.get("reference_ms")]
            if not rs:
                lines.append(f"| {rev} | {name} | 0 | - | - | - |")
                continue

            def med(k):
                return statistics.median(r[k] for r in rs)
            lines.append(f"| {rev} | {name} | {len(rs)} | {med('reference_ms'):.4f} | "
                         f"{med('median_ms'):.4f} | {med('speedup'):.2f} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
