"""Two KernelBench runner result sets side by side: per task, how much slower (+) or faster (-)
run A measured eager and inductor than run B, and the medians.

    python3 benchmarks/compare_runs.py A_DIR B_DIR

Or, within one results file, the tasks run again from its line N on against their record before
it: the spread of eager's time between runs, how the built-in speedups moved (split at an
eager time of 0.3 ms, below which calls are launch-bound), and where the records have the
runners' host probe, how much slower or faster the host issued work; then each rerun's record
beside the one before it:

    python3 benchmarks/compare_runs.py --reruns DIR --since N
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path


def load(d: str) -> dict:
    lines = (Path(d) / "results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in (json.loads(x) for x in lines if x.strip()) if r.get("eager_ms")}


def reruns(d: str, since: int, total: int = 250) -> int:
    lines = (Path(d) / "results.jsonl").read_text().splitlines()
    before, after = {}, {}
    for i, x in enumerate(lines):
        r = json.loads(x)
        if r.get("replay_rechecked"):
            continue   # its search is the record's before it (benchmarks/replay_recheck.py)
        if r.get("status") == "ok" and r.get("eager_ms") and r.get("builtin_ms"):
            (before if i < since else after)[r["id"]] = r
    both = [k for k in after if k in before]
    if len(both) < 2:
        print(f"{len(both)} tasks run again; nothing to compare")
        return 0
    speed = lambda r: r["eager_ms"] / r["builtin_ms"]  # noqa: E731
    eager = [math.log(after[k]["eager_ms"] / before[k]["eager_ms"]) for k in both]
    moved = {k: math.log(speed(after[k]) / speed(before[k])) for k in both}
    short = [k for k in both if before[k]["eager_ms"] < 0.3]
    print(f"{len(both)} tasks run again; log(eager now / eager before): mean {statistics.mean(eager):+.3f}, "
          f"standard deviation {statistics.stdev(eager):.3f}")
    print(f"sum of log(built-in speedup now / before): all {sum(moved.values()):+.3f}; "
          f"eager >= 0.3 ms ({len(both) - len(short)} tasks) "
          f"{sum(v for k, v in moved.items() if k not in short):+.3f}; "
          f"eager < 0.3 ms ({len(short)} tasks) {sum(moved[k] for k in short):+.3f}")
    print(f"on the figure over all {total} tasks: a factor of {math.exp(sum(moved.values()) / total):.4f}")
    probed = [k for k in both if before[k].get("host_launch_us") and after[k].get("host_launch_us")]
    if probed:   # the runners' host probe: how fast each host issued work
        host = [math.log(after[k]["host_launch_us"] / before[k]["host_launch_us"]) for k in probed]
        print(f"host time per tiny op, now / before ({len(probed)} tasks with both probes): "
              f"x{math.exp(statistics.mean(host)):.2f}")
    timed = [k for k in both if before[k].get("inductor_ms") and after[k].get("inductor_ms")]
    if timed:   # inductor's code is host-bound on short tasks: it drifts like eager, or more
        q = sorted(after[k]["inductor_ms"] / before[k]["inductor_ms"] for k in timed)
        print(f"inductor now / before ({len(timed)} tasks): min x{q[0]:.2f}, "
              f"median x{statistics.median(q):.2f}, max x{q[-1]:.2f}")
    print(rerun_table(lines, since))
    return 0


def rerun_table(lines: list[str], since: int) -> str:
    """Every record from line ``since`` on beside the task's record before it (an earlier rerun
    included): task seconds, eager and built-in times, winners."""
    winner = lambda r: str(r.get("builtin_winner") or "").removeprefix("builtin:")  # noqa: E731
    out = ["", "| task | line | task s | eager ms | built-in ms (winner) | before: eager ms | "
               "built-in ms (winner) |", "|---|---|---|---|---|---|---|"]
    last: dict = {}
    for i, x in enumerate(lines):
        r = json.loads(x)
        if r.get("replay_rechecked") or r.get("status") != "ok" or not r.get("eager_ms") \
                or not r.get("builtin_ms"):
            continue
        b = last.get(r["id"])
        if i >= since and b is not None:
            out.append(f"| {r['id']} | {i + 1} | {r.get('seconds') or 0:.0f} | {r['eager_ms']:.3f} | "
                       f"{r['builtin_ms']:.3f} ({winner(r)}) | {b['eager_ms']:.3f} | "
                       f"{b['builtin_ms']:.3f} ({winner(b)}) |")
        last[r["id"]] = r
    return "\n".join(out)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--reruns":
        total = int(argv[argv.index("--total") + 1]) if "--total" in argv else 250
        return reruns(argv[1], int(argv[argv.index("--since") + 1]), total)
    a_dir, b_dir = argv[:2]
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
