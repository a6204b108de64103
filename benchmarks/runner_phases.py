"""Where the KernelBench runner's time goes, per task: its attempts' wall time split into the
verifier child's phases (the reference built and its canary taken, build, verify, time, the
reference's paired timing, the canary's checks, device-lock wait) and the rest (the child's start,
imports and CUDA context, the parent's work), from the records' per-attempt ``phases``.

    PYTHONPATH=. python3 benchmarks/runner_phases.py benchmarks/results/kernelbench/h200 [--since N]

Prints a markdown table, one row per record from line ``--since`` on (0-based), then the totals.
Records up to line 484 of the H200 results counted the lock waits inside the phases they fell
in as well: there the rest (``other_s``) comes out too small, even below zero.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PHASES = ("reference_s", "build_s", "verify_s", "time_s", "time_ref_s", "canary_s", "lock_wait_s")


def task_phases(record: dict) -> dict:
    """Sums over the record's attempts: wall, each phase, and what the phases leave out."""
    tot = dict.fromkeys(("wall_s",) + PHASES, 0.0)
    for a in record.get("attempts") or []:
        for k, v in (a.get("phases") or {}).items():
            if k in tot:
                tot[k] += float(v)
    tot["other_s"] = tot["wall_s"] - sum(tot[k] for k in PHASES)
    tot["attempts"] = len(record.get("attempts") or [])
    return tot


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the runner's --out folder (results.jsonl inside)")
    ap.add_argument("--since", type=int, default=0, help="first record (line, 0-based)")
    args = ap.parse_args(argv)
    lines = (Path(args.results) / "results.jsonl").read_text().splitlines()
    cols = ("wall_s", "other_s", "lock_wait_s", "reference_s", "build_s", "verify_s", "time_s",
            "time_ref_s", "canary_s")
    print("| line | task | attempts | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    total = dict.fromkeys(cols, 0.0)
    for i, line in enumerate(lines[args.since:], start=args.since):
        rec = json.loads(line)
        if rec.get("replay_rechecked"):
            continue   # a copy of the search before it (benchmarks/replay_recheck.py)
        t = task_phases(rec)
        if not t["wall_s"]:
            continue   # no phases recorded (older records, harness failures)
        for k in cols:
            total[k] += t[k]
        print(f"| {i} | {rec.get('id')} | {t['attempts']} | "
              + " | ".join(f"{t[k]:.0f}" for k in cols) + " |")
    print("| | all | | " + " | ".join(f"{total[k]:.0f}" for k in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
