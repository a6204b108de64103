"""Time to a winner, one task at a time: each KernelBench task's whole search (baselines, the
built-in engine's rounds, the re-timing and the baselines' confirmation) with default options, at
each float32 precision and each ``parallel_builds`` asked for, one search after another so that
nothing but the search itself uses the device.

    PYTHONPATH=. python3 benchmarks/search_latency.py --device cuda --stride 25 \\
        --precisions highest,high --builds 1,4 --out benchmarks/results/search_latency/h200

``--builds 1`` verifies and times the candidates one after another; more lets that many whole
verifications run at once on a GPU (``search.loop.pipelines``: the device lock keeps each timing
alone on the device). Per task and setting it records the search's wall time (what a first call
waits before the winner is served), when the winner's verdict was in, the winner and its speedup
over eager; the table compares the settings on the same tasks. Every search starts from empty
inductor and Triton caches, as a first call of a new graph does. One JSON line per search in
``search_latency.jsonl`` (appended to: ``--resume`` skips what is there), the table in
``search_latency.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paths import kernelbench_data  # noqa: E402


def task_rows(data: Path, ids: list[str] | None, stride: int) -> list[dict]:
    rows = []
    for line in data.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            r["id"] = f"L{r['level_id']}_{r['task_id']}"
            rows.append(r)
    if ids:
        by = {r["id"]: r for r in rows}
        return [by[i] for i in ids if i in by]
    return rows[::stride]


def one_search(row: dict, precision: str, builds: int, device: str, budget_s: float,
               workdir: Path) -> dict:
    import torch

    from torch_cudal1.options import Options
    from torch_cudal1.search import SearchError, run_search
    from torch_cudal1.task import Task
    import os
    torch.set_float32_matmul_precision(precision)
    # cold compiler caches for every search, as a first call of a new graph finds them: a
    # setting measured after another on the same task would otherwise reuse its compiles
    fresh = workdir / f"{row['id']}-{precision}-x{builds}"
    os.environ.update(TORCHINDUCTOR_CACHE_DIR=str(fresh / "inductor"),
                      TRITON_CACHE_DIR=str(fresh / "triton"))
    opts = Options.resolve({"engine": "builtin", "time_budget_s": budget_s, "progress": False,
                            "parallel_builds": builds, "pipeline": builds > 1,
                            "cache_dir": str(workdir / "cache")})
    rec = {"id": row["id"], "precision": precision, "builds": builds}
    t0 = time.monotonic()
    try:
        res = run_search(Task(source=row["ref_code"], name=row["id"]), opts, device,
                         key=row["id"], progress=lambda line: None)
    except SearchError as e:
        return rec | {"status": "reference_failed", "error": str(e)[:300],
                      "seconds": round(time.monotonic() - t0, 1)}
    try:
        w = res.winner
        rec |= {"status": "ok", "seconds": round(time.monotonic() - t0, 1),
                "winner": w.candidate.origin, "winner_at_s": w.at_s,
                "winner_ms": w.timing.median_ms, "eager_ms": res.eager_ms,
                "inductor_ms": res.inductor_ms, "speedup": w.speedup_vs_eager,
                "stop_reason": res.stop_reason,
                "attempts": [{"origin": a.candidate.origin, "reason": a.verdict.reason,
                              "ms": a.timing.median_ms if a.timing else None,
                              "seconds": round(a.seconds, 1), "at_s": a.at_s}
                             for a in res.attempts]}
    finally:
        res.cleanup()
    return rec


def _geo(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(recs: list[dict]) -> str:
    settings = sorted({(r["precision"], r["builds"]) for r in recs})
    ok = {(r["id"], r["precision"], r["builds"]): r for r in recs if r.get("status") == "ok"}
    ids = sorted({r["id"] for r in recs})
    lines = ["| precision | parallel_builds | tasks | median search s | 90th pct s | "
             "median winner found at s | geomean speedup over eager |",
             "|---|---|---|---|---|---|---|"]
    for p, b in settings:
        # only tasks every setting of this precision finished, so the rows compare alike
        common = [i for i in ids if all((i, p, bb) in ok for pp, bb in settings if pp == p)]
        rs = [ok[(i, p, b)] for i in common]
        if not rs:
            continue
        secs = sorted(r["seconds"] for r in rs)
        lines.append(f"| {p} | {b} | {len(rs)} | {statistics.median(secs):.1f} | "
                     f"{secs[min(len(secs) - 1, int(0.9 * len(secs)))]:.1f} | "
                     f"{statistics.median(r['winner_at_s'] or 0 for r in rs):.1f} | "
                     f"{_geo([r['speedup'] or 1.0 for r in rs]):.3f} |")
    lines += ["", "| task | " + " | ".join(f"{p} x{b}: s, speedup, winner" for p, b in settings)
              + " |", "|---|" + "---|" * len(settings)]
    for i in ids:
        cells = []
        for p, b in settings:
            r = ok.get((i, p, b))
            cells.append(f"{r['seconds']:.0f} s, x{(r['speedup'] or 1.0):.2f}, {r['winner']}"
                         if r else "-")
        lines.append(f"| {i} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="KernelBench jsonl (default: benchmarks.paths)")
    ap.add_argument("--ids", help="comma-separated task ids (L1_12,...)")
    ap.add_argument("--stride", type=int, default=25, help="every K-th task of the data")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precisions", default="highest")
    ap.add_argument("--builds", default="1,4", help="parallel_builds settings to compare")
    ap.add_argument("--budget", type=float, default=400.0, help="time_budget_s of each search")
    ap.add_argument("--max-seconds", type=float, default=0, help="start no search after this")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "search_latency.jsonl"
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] \
        if args.resume and path.exists() else []
    if not args.resume:
        path.write_text("")
    done = {(r["id"], r["precision"], r["builds"]) for r in recs}
    rows = task_rows(Path(args.data) if args.data else kernelbench_data(),
                     args.ids.split(",") if args.ids else None, args.stride)
    work = out / "work"
    t_start = time.monotonic()
    plan = [(row, p, int(b)) for row in rows for p in args.precisions.split(",")
            for b in args.builds.split(",")]
    for row, p, b in plan:
        if (row["id"], p, b) in done:
            continue
        if args.max_seconds and time.monotonic() - t_start > args.max_seconds:
            print(f"stopping at --max-seconds {args.max_seconds:.0f}", flush=True)
            break
        rec = one_search(row, p, b, args.device, args.budget, work)
        recs.append(rec)
        with path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"{rec['id']:8} {p:8} x{b}: {rec.get('status')} {rec.get('seconds')} s "
              f"winner {rec.get('winner')} at {rec.get('winner_at_s')} s "
              f"x{(rec.get('speedup') or 0):.2f}", flush=True)
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    md = table(recs)
    (out / "search_latency.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
