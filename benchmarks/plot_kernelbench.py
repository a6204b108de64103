"""Speedup distribution per level from the KernelBench runner's results.jsonl, as a PNG.

    PYTHONPATH=. python3 benchmarks/plot_kernelbench.py RESULTS_DIR [--out speedups.png]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IMPLS = (("inductor_ms", "inductor"), ("builtin_ms", "cudal1 builtin"), ("replay_ms", "cudal1 replay"))


def load(results_dir: Path) -> list[dict]:
    lines = (results_dir / "results.jsonl").read_text().splitlines()
    return [r for r in (json.loads(x) for x in lines if x.strip())
            if r.get("status") == "ok" and r.get("eager_ms")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return 2
    recs = load(args.results)
    levels = sorted({r["level"] for r in recs})
    if not levels:
        print("no measured tasks", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(1, len(levels), figsize=(5 * len(levels), 4), squeeze=False)
    for ax, lv in zip(axes[0], levels):
        rs = [r for r in recs if r["level"] == lv]
        data, labels = [], []
        for col, name in IMPLS:
            xs = [math.log2(r["eager_ms"] / r[col]) for r in rs if r.get(col)]
            data.append(xs)
            labels.append(f"{name}\n(n={len(xs)})")
        ax.boxplot(data, showfliers=True)
        ax.set_xticks(range(1, len(labels) + 1), labels)
        ax.axhline(0.0, color="gray", lw=0.8)
        ax.set_title(f"level {lv}")
        ax.set_ylabel("log2 speedup over eager")
    fig.tight_layout()
    out = args.out or args.results / "speedups.png"
    fig.savefig(out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
