"""The CUDA-L1 solutions that make a task's replay figure, verified and timed again under the
verifier's rules as they are now (``torch_cudal1.verify.RULES``): a rule added since their
record was made may reject them (outputs of separate calls sharing memory, which rejects the
replay winners of L2_66 and L2_80; outputs in another layout than the reference's). A task's whole search would take minutes; this takes one verification.

    PYTHONPATH=. python3 benchmarks/replay_recheck.py --device cuda \\
        --out benchmarks/results/kernelbench/h200 [--ids L1_55,L2_66] [--jobs 4] [--max-seconds S]

Without ``--ids``: every task whose latest record's replay winner is the CUDA-L1 solution,
verified under an older revision of the rules, and every task whose accepted solution was timed
once while the host disturbed it where, within its spread, it could have won
(``kernelbench_runner.replay_disturbed``; e.g. L3_31's, once 7.23 ms +-5.83 against 1.52),
that timing taken once more where it is so again. Each appends a record to ``results.jsonl``: the
task's latest, its search and baselines untouched, with the replay fields replaced
(``replay_candidate.rules``, ``replay_rechecked``). The solution's new time is set against the
search's recorded times, which were taken in an earlier run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import kernelbench_runner as kb  # noqa: E402
from torch_cudal1 import search  # noqa: E402
from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict  # noqa: E402
from torch_cudal1.options import Options  # noqa: E402
from torch_cudal1.task import Task  # noqa: E402


def best_baseline(rec: dict) -> Attempt | None:
    """The record's fastest accepted baseline, as the search's rule compares with it."""
    ok = [a for a in rec.get("attempts") or [] if str(a.get("origin")).startswith("baseline:")
          and a.get("reason") == "ok" and a.get("ms")]
    if not ok:
        return None
    a = min(ok, key=lambda a: a["ms"])
    return Attempt(Candidate("", a["origin"]), Verdict.ok(),
                   Timing(a["ms"], a.get("spread_ms") or 0.0, a.get("n") or 1))


def recheck(row: dict, rec: dict, args) -> dict:
    """``rec`` with its replay fields from a new verification of the solution."""
    from torch_cudal1.verify import RULES, evaluate
    t0 = time.monotonic()
    task = Task(source=row["ref_code"], name=row["id"])
    cand = kb.replay_candidate(row, task, args.data, args.device)
    opts = Options.resolve({"engine": "builtin"})

    def again(c, record=False):
        return Attempt(c, *evaluate(task, c, device=args.device, trials=3, timeout_s=300.0,
                                    pair_reference=opts.pairs_reference(args.device)))
    solution = again(cand)
    if solution.verdict.accepted and solution.timing is not None and args.device != "cpu":
        search.retime_unsound([solution], again, lambda line: print(f"{row['id']}: {line}"))
    verdict, timing = solution.verdict, solution.timing
    new = dict(rec, **kb.replay_fields(rec, cand, verdict, timing, best_baseline(rec)))
    new["replay_rechecked"] = {"rules": RULES, "seconds": round(time.monotonic() - t0, 1),
                               "before": {"replay_ms": rec.get("replay_ms"),
                                          "replay_winner": rec.get("replay_winner")}}
    return new


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(kb.DEFAULT_DATA))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "kernelbench" / "h200"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--ids", help="comma-separated task ids, whatever their records say")
    ap.add_argument("--jobs", type=int, default=4, help="solutions in flight (timings never overlap)")
    ap.add_argument("--max-seconds", type=float, default=0, help="start none after this long")
    ap.add_argument("--total-tasks", type=int, default=250)
    args = ap.parse_args(argv)
    from filelock import FileLock
    from torch_cudal1.verify import RULES
    out = Path(args.out)
    results = out / "results.jsonl"
    lock = FileLock(str(out / "results.lock"))
    rows = {r["id"]: r for r in kb.load_tasks(argparse.Namespace(
        data=args.data, tasks=None, level=None, slice=None))}
    latest = kb.read_results(results)
    ids = args.ids.split(",") if args.ids else sorted(
        i for i, r in latest.items() if kb.replay_under_older_rules(r) or kb.replay_disturbed(r))
    todo = [i for i in ids if i in rows and latest.get(i, {}).get("status") == "ok"]
    print(f"{len(todo)} solutions to verify and time again (rules revision {RULES}): "
          f"{', '.join(todo) or 'none'}", flush=True)
    started = time.monotonic()

    def one(tid: str) -> None:
        if args.max_seconds and time.monotonic() - started > args.max_seconds:
            print(f"{tid}: not started (--max-seconds reached)", flush=True)
            return
        rec = recheck(rows[tid], latest[tid], args)
        with lock:
            with results.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
        rc = rec.get("replay_candidate") or {}
        print(f"{tid}: {rc.get('reason')} {rc.get('ms')} ms; replay figure's time "
              f"{rec['replay_rechecked']['before']['replay_ms']} -> {rec['replay_ms']} "
              f"({rec['replay_winner']}) [{rec['replay_rechecked']['seconds']} s]", flush=True)

    with ThreadPoolExecutor(max(1, args.jobs), thread_name_prefix="recheck") as pool:
        for f in [pool.submit(one, t) for t in todo]:
            f.result()
    cpath = out / "ceilings.json"
    with lock:
        kb.write_summary(list(rows.values()), results,
                         json.loads(cpath.read_text()) if cpath.exists() else {}, out, args.total_tasks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
