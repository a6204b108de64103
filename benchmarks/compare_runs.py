"""Two KernelBench runner result sets side by side: per task, how much slower (+) or faster (-)
run A measured eager and inductor than run B, and the medians.

    python3 benchmarks/compare_runs.py A_DIR B_DIR
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def load(d: str) -> dict:
    lines = (Path(d) / "results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in (json.loads(x) for x in lines if x.strip()) if r.get("eager_ms")}


def main(argv=None) -> int:
    a_dir, b_dir = (argv or sys.argv[1:])[:2]
    a, b = load(a_dir), load(b_dir)
    common = sorted(set(a) & set(b), key=lambda k: (int(k[1:].split("_")[0]), int(k.split("_")[1])))
    cols = ("eager_ms", "inductor_ms")
    diffs = {c: [] for c in cols}
    print("| task | eager A vs B | inductor A vs B |\n|---|---|---|")
    for k in common:
        row = []
        for c in cols:
            d = 100 * (a[k][c] / b[k][c] - 1)
            diffs[c].append(d)
            row.append(f"{d:+.0f}%")
        print(f"| {k} | {' | '.join(row)} |")
    print(f"\n{len(common)} tasks; median: " + ", ".join(
        f"{c[:-3]} {statistics.median(v):+.0f}% (range {min(v):+.0f}% to {max(v):+.0f}%)"
        for c, v in diffs.items() if v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
