"""Time to a winner, from the KernelBench runner's records: when each task's search found the
implementation it serves, and the speedup over eager reachable after t seconds of search.

    PYTHONPATH=. python3 benchmarks/time_to_winner.py \\
        [--records benchmarks/results/kernelbench/h200/results.jsonl] [--precision highest|high|both] \\
        [--out benchmarks/results/time_to_winner/h200]

Each attempt of a search records when its verdict was in (``at_s``, seconds from the search's
start). Records written before that field existed are read with each attempt ending at the sum
of the attempt times before it, in the order they were made; candidates verified in parallel
then count one after another, so those times are upper bounds (the table says which it used).

At ``"highest"`` (PyTorch's default float32 precision) attempts with TF32 products are left out,
as a search at that precision does not propose them; at ``"high"`` every attempt counts. The
speedup reachable at time t is eager's time over the fastest verified attempt whose verdict was
in by t (1.0 before any: the model runs eagerly while it waits). The final speedup is that of the
whole search (before the winner's re-timing and the baselines' confirmation, which can only keep
or lower it); the share of it reached by t is taken in log terms (1.0x is none of a 2.0x gain,
1.41x half of it).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = (5, 10, 20, 30, 45, 60, 90, 120, 180, 240, 300, 400)


def _last(path: Path) -> dict:
    last = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            last[r["id"]] = r
    return last


def timeline(rec: dict, precision: str) -> tuple[list[tuple[float, float]], bool] | None:
    """[(seconds into the search, ms)] of the verified attempts allowed at ``precision``, and
    whether the times were recorded (True) or summed from attempt times (False)."""
    attempts = rec.get("attempts") or []
    if rec.get("status") != "ok" or not attempts or not rec.get("eager_ms"):
        return None
    recorded = all(a.get("at_s") is not None for a in attempts)
    t, out = 0.0, []
    for a in attempts:
        t = float(a["at_s"]) if recorded else t + float(a.get("seconds") or 0.0)
        if a.get("reason") != "ok" or not a.get("ms"):
            continue
        if precision == "highest" and "tf32" in a["origin"]:
            continue
        out.append((t, float(a["ms"])))
    return (out, recorded) if out else None


def task_figures(rec: dict, precision: str) -> dict | None:
    tl = timeline(rec, precision)
    if tl is None:
        return None
    points, recorded = tl
    eager = float(rec["eager_ms"])
    best_t, best_ms = min(points, key=lambda p: (p[1], p[0]))
    reach = {}
    for g in GRID:
        done = [ms for t, ms in points if t <= g]
        reach[g] = eager / min(done) if done else 1.0
    return {"id": rec["id"], "final": eager / best_ms, "winner_s": round(best_t, 1),
            "search_s": round(max(t for t, _ in points), 1), "recorded": recorded,
            "reach": reach, "winner": next(a["origin"] for a in rec["attempts"]
                                           if a.get("ms") == best_ms)}


def _shown(path: str) -> str:
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else path


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(figs: list[dict], precision: str) -> list[str]:
    final = geomean(f["final"] for f in figs)
    winners = sorted(f["winner_s"] for f in figs)
    lines = [f"### At \"{precision}\" ({len(figs)} tasks)", "",
             f"Time to the winner: median {statistics.median(winners):.1f} s, "
             f"90th percentile {winners[int(0.9 * (len(winners) - 1))]:.1f} s; "
             f"final geomean speedup over eager {final:.3f}.", "",
             "| search time s | geomean speedup over eager | share of the final gain | tasks at >= 95% of their final speedup |",
             "|---|---|---|---|"]
    for g in GRID:
        reach = geomean(f["reach"][g] for f in figs)
        at95 = sum(1 for f in figs if f["reach"][g] >= 0.95 * f["final"])
        gain = math.log(reach) / math.log(final) if final > 1 else 1.0   # in log terms
        lines.append(f"| {g} | {reach:.3f} | {gain:.0%} | {at95} of {len(figs)} |")
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", default=str(ROOT / "benchmarks/results/kernelbench/h200/results.jsonl"))
    ap.add_argument("--precision", default="both", choices=("highest", "high", "both"))
    ap.add_argument("--out", default=None, help="write README.md and time_to_winner.jsonl here")
    args = ap.parse_args(argv)
    recs = _last(Path(args.records))
    precisions = ("highest", "high") if args.precision == "both" else (args.precision,)
    cmd = "PYTHONPATH=. python3 benchmarks/time_to_winner.py " + " ".join(
        argv if argv is not None else __import__("sys").argv[1:])
    lines = ["# Time to a winner on KernelBench", "", f"`{cmd}`", "",
             f"Records: `{_shown(args.records)}` (the last record of each task)."]
    data = {}
    for p in precisions:
        figs = [f for f in (task_figures(r, p) for r in recs.values()) if f]
        data[p] = figs
        if not figs:
            continue
        summed = sum(1 for f in figs if not f["recorded"])
        if summed:
            lines += ["", f"{summed} of {len(figs)} tasks' records predate the attempts' own "
                      "times: their times are sums of attempt times in order, upper bounds."]
        lines += [""] + report(figs, p)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "README.md").write_text(text)
        (out / "time_to_winner.jsonl").write_text("".join(
            json.dumps({"precision": p, **f}) + "\n" for p, figs in data.items() for f in figs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
