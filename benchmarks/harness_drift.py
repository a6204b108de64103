"""How far the harness's cost per call in the candidate's process moves from its calibration,
on honest candidates whose calls are short beside the harness around them (where the judge's
clock check, ``judge._cross_check``, is the tightest).

The judge calibrates the harness's cost per call in the worker on the reference before the
candidate is imported (``harness_ratio``) and takes it off every timed batch's wall time; an
honest candidate's reported times must then account for what is left. Whatever the harness
really cost beyond its estimate shows as calls' time the reported times do not explain:

    drift = (harness_ms + judge_ms - reported_mean_ms) / harness_ms - 1

(``harness_ms``: the estimate per call; ``judge_ms``: the calls' time per call on the judge's
clock; ``reported_mean_ms``: what the calls reported, per call; all from ``timing.extra``).
The drift here is the whole run's; the judge decides on its median batch, with the harness's
cost taken ``judge.HARNESS_DRIFT`` above its estimate.

    PYTHONPATH=. python3 benchmarks/harness_drift.py [--device cpu] [--repeat 8] \\
        [--out DIR (default benchmarks/results/harness_drift/<device>)]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ADV = ROOT / "tests" / "adversarial"
# honest candidates whose calls take from tens of microseconds to about a millisecond on a CPU,
# short beside the harness around each call
CASES = [("diag_matmul", "honest_diag_broadcast.py"), ("own_table", "honest_own_table.py"),
         ("linear_act", "honest_fused_linear.py"), ("row_sum", "honest_row_sum_chunks.py"),
         ("diag_matmul", "honest_threads.py")]


def drift(extra: dict) -> float | None:
    h, j, r = extra.get("harness_ms"), extra.get("judge_ms"), extra.get("reported_mean_ms")
    if not h or j is None or r is None:
        return None
    return (h + j - r) / h - 1.0


def measure(device: str, repeat: int, time_budget_s: float) -> list[dict]:
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    from torch_cudal1.verify.judge import HARNESS_DRIFT
    os.environ.setdefault("CUDAL1_VERIFY_FORKSERVER", "1")
    rows = []
    for task_name, cand_name in CASES:
        task = Task.from_file(ADV / "tasks" / f"{task_name}.py")
        cand = Candidate((ADV / cand_name).read_text(), origin="bench:" + cand_name)
        runs = []
        for i in range(repeat + 1):   # the first starts the fork-server template: not kept
            verdict, timing = evaluate(task, cand, device=device, time_budget_s=time_budget_s)
            if not i:
                continue
            x = timing.extra if timing else {}
            runs.append({"verdict": verdict.reason, "median_ms": timing and timing.median_ms,
                         "harness_ratio": x.get("harness_ratio"),
                         "harness_ratios": x.get("harness_ratios"),
                         "harness_ms": x.get("harness_ms"),
                         "judge_ms": x.get("judge_ms"), "reported_mean_ms": x.get("reported_mean_ms"),
                         "explained": x.get("explained"), "scaled_by_judge": x.get("scaled_by_judge"),
                         "drift": drift(x), "detail": None if verdict.accepted else verdict.detail})
        ds = [r["drift"] for r in runs if r["drift"] is not None]
        rows.append({"task": task_name, "candidate": cand_name, "runs": runs,
                     "accepted": sum(r["verdict"] == "ok" for r in runs),
                     "refused": [r["verdict"] for r in runs if r["verdict"] != "ok"],
                     "scaled": sum(bool(r["scaled_by_judge"]) for r in runs),
                     "call_ms": _med([r["reported_mean_ms"] for r in runs]),
                     "harness_ms": _med([r["harness_ms"] for r in runs]),
                     "ratio": _med([r["harness_ratio"] for r in runs]),
                     "drift_median": _med(ds), "drift_min": min(ds, default=None),
                     "drift_max": max(ds, default=None), "allowed": HARNESS_DRIFT})
    return rows


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def table(rows: list[dict]) -> str:
    lines = ["| task | candidate | accepted | timed by the judge's clock | call ms | harness ms "
             "| harness ratio | drift median | drift min..max |", "|" + "---|" * 9]
    for r in rows:
        n = len(r["runs"])
        lines.append(
            f"| {r['task']} | {r['candidate']} | {r['accepted']}/{n} | {r['scaled']}/{n} "
            f"| {_f(r['call_ms'], '.4f')} | {_f(r['harness_ms'], '.4f')} | {_f(r['ratio'], '.2f')} "
            f"| {_f(r['drift_median'], '+.2f')} "
            f"| {_f(r['drift_min'], '+.2f')}..{_f(r['drift_max'], '+.2f')} |")
    allowed = rows[0]["allowed"] if rows else None
    return "\n".join(lines) + (
        f"\n\nThe judge takes the harness's cost at {allowed:+.2f} of its estimate "
        "(`judge.HARNESS_DRIFT`) before it decides: a candidate is `timer_tampering` only where "
        "its reported times then explain under 35% of its calls' time in the median batch; "
        "short of 80% at the estimate itself, it is timed by the judge's clock.\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--time-budget", type=float, default=0.3,
                    help="each verification's timing budget (s); the tests use 0.3")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from benchmarks.paths import RESULTS, device_dir_name
    out = Path(args.out or RESULTS / "harness_drift" / device_dir_name(args.device))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows = measure(args.device, args.repeat, args.time_budget)
    text = table(rows)
    print(text)
    (out / "harness_drift.json").write_text(json.dumps(rows, indent=1))
    cmd = "PYTHONPATH=. python3 benchmarks/harness_drift.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    (out / "README.md").write_text(
        "# The harness's cost in the candidate's process against its calibration\n\n"
        f"`{cmd.strip()}` ({time.monotonic() - t0:.0f} s; `harness_drift.json` per run)\n\n"
        "Honest candidates with short calls, each verified `--repeat` times after a first run "
        "that starts the fork-server template. *drift*: the harness's cost per call in the "
        "worker during the timed run over the judge's estimate of it (calibrated on the "
        "reference before the candidate's import), less one; *timed by the judge's clock*: "
        "runs whose reported times fell short of the judge's clock and were scaled up "
        "(`scaled_by_judge`). See the script's docstring.\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
