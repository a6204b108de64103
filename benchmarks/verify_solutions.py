"""CUDA-L1's published KernelBench solutions through this checkout's verifier, each verdict set
beside the one an earlier verifier gave it (the KernelBench runner's records, or an earlier
run's verdicts.jsonl with --before).

    PYTHONPATH=. python3 benchmarks/verify_solutions.py --data KERNELBENCH.jsonl \\
        --records benchmarks/results/kernelbench/h200/results.jsonl --device cuda \\
        [--before OLD/verdicts.jsonl] [--workers 10] [--max-seconds 500] [--out DIR]
        [--ids L2_9 --repeat 10]

Every solution is verified and timed at the float32 precision PyTorch defaults to
(``"highest"``); one rejected as ``mismatch`` is verified again at ``"high"``, which tells a
solution that is right only at TF32-level precision (TF32, fp16 or bf16 inside) from one that is
wrong. Results go to ``OUT/verdicts.jsonl`` (a rerun skips what is there: the work fits several
calls) and ``OUT/README.md``: how many verdicts changed, and a table of each change with the
reason given. With ``--repeat N`` each named solution is verified N times, and the README
counts each one's verdicts over its runs: a verdict that changes from run to run is a
verifier's, not the solution's.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _old(records: str | None) -> dict:
    out = {}
    if records and Path(records).exists():
        for r in _load(records):
            rc = r.get("replay_candidate")
            if isinstance(rc, dict):
                out[r["id"]] = rc.get("reason")
    return out


def _before(path: str) -> dict:
    """An earlier run's verdicts (the last line of an id is its verdict)."""
    return {r["id"]: r["reason"] for r in _load(path)}


def verify(row: dict, device: str, timeout: float) -> dict:
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    key = f"L{row['level_id']}_{row['task_id']}"
    task = Task(row["ref_code"], name=key)
    cand = Candidate(row["custom_code"], origin="replay:cudal1")
    t0 = time.monotonic()
    v, t = evaluate(task, cand, device=device, timeout_s=timeout, time_budget_s=1.0,
                    precision="highest")
    rec = {"id": key, "reason": v.reason, "detail": v.detail[:400],
           "ms": t.median_ms if t else None, "seconds": round(time.monotonic() - t0, 1),
           "stats": {k: v.stats.get(k) for k in ("sandbox", "rel_error", "reference")}}
    if t is not None:
        rec["timing"] = {k: t.extra.get(k) for k in ("reference_ms", "judge_ms", "explained",
                                                      "scaled_by_judge")}
    if v.reason == "mismatch":
        v2, _ = evaluate(task, cand, device=device, timeout_s=timeout, time_it=False,
                         precision="high")
        rec["at_high"] = v2.reason
    return rec


def report(out: Path, recs: list[dict], old: dict, cmd: str, runs: list[dict] = ()) -> str:
    new = {r["id"]: r for r in recs}
    changed = [r for r in recs if old.get(r["id"]) is not None and old[r["id"]] != r["reason"]]
    counts = collections.Counter(r["reason"] for r in recs)
    lines = ["# CUDA-L1's solutions under the current verifier", "", f"`{cmd}`", "",
             f"{len(recs)} solutions verified; {len(changed)} verdicts differ from the earlier "
             f"verifier's ({sum(1 for k in new if k in old)} had one).", "",
             "Verdicts now: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()), "",
             "| task | before | now | at \"high\" | why |", "|---|---|---|---|---|"]
    for r in sorted(changed, key=lambda r: (r["reason"], r["id"])):
        why = r["detail"].replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {r['id']} | {old[r['id']]} | {r['reason']} | {r.get('at_high', '')} | "
                     f"{why} |")
    by_id: dict[str, collections.Counter] = {}
    for r in runs:
        by_id.setdefault(r["id"], collections.Counter())[r["reason"]] += 1
    if by_id:
        lines += ["", "## Verdicts over each solution's runs", "",
                  "| task | runs | verdicts |", "|---|---|---|"]
        for k, c in sorted(by_id.items()):
            lines.append(f"| {k} | {sum(c.values())} | "
                         + ", ".join(f"{r} {n}" for r, n in c.most_common()) + " |")
    text = "\n".join(lines) + "\n"
    (out / "README.md").write_text(text)
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--records", default=None, help="the KernelBench runner's results.jsonl")
    ap.add_argument("--before", default=None,
                    help="an earlier run's verdicts.jsonl to compare with, instead of --records")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--max-seconds", type=float, default=float("inf"),
                    help="start no verification after this long (a rerun goes on)")
    ap.add_argument("--ids", default=None, help="only these (L1_12,L2_3,...), verified again")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --ids: verify each of them this many times, and count the verdicts")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "verify_solutions"))
    args = ap.parse_args(argv)
    if args.repeat > 1 and not args.ids:
        ap.error("--repeat needs --ids")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done_path = out / "verdicts.jsonl"
    done = {r["id"]: r for r in _load(done_path)} if done_path.exists() else {}
    rows = [r for r in _load(args.data) if r.get("custom_code")]
    if args.ids:
        want = set(args.ids.split(","))
        rows = [r for r in rows if f"L{r['level_id']}_{r['task_id']}" in want]
        for i in want:   # named: verified again (the last line of an id is its verdict)
            done.pop(i, None)
    todo = [r for r in rows if f"L{r['level_id']}_{r['task_id']}" not in done]
    todo.sort(key=lambda r: "load_inline" not in r["custom_code"])   # builds first: the longest
    todo = [r for r in todo for _ in range(args.repeat)]
    runs: list[dict] = []
    start = time.monotonic()
    os.environ.setdefault("CUDAL1_VERIFY_FORKSERVER", "1")
    from torch_cudal1.bench.timing_cpus import apply_work_cpus
    apply_work_cpus()   # builds off the cores CUDAL1_TIMING_CPUS keeps for timings
    with concurrent.futures.ThreadPoolExecutor(args.workers) as pool, open(done_path, "a") as f:
        futures = {}
        for r in todo:
            if time.monotonic() - start > args.max_seconds:
                break
            futures[pool.submit(verify, r, args.device, args.timeout)] = r
            while len(futures) >= args.workers * 2:
                fin, _ = concurrent.futures.wait(futures, return_when="FIRST_COMPLETED")
                for fu in fin:
                    futures.pop(fu)
                    rec = fu.result()
                    done[rec["id"]] = rec
                    runs.append(rec)
                    f.write(json.dumps(rec) + "\n")
                    f.flush()
                    print(f"{rec['id']} {rec['reason']} {rec['seconds']}s", flush=True)
                if time.monotonic() - start > args.max_seconds:
                    break
        for fu in concurrent.futures.as_completed(futures):
            rec = fu.result()
            done[rec["id"]] = rec
            runs.append(rec)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(f"{rec['id']} {rec['reason']} {rec['seconds']}s", flush=True)
    cmd = "PYTHONPATH=. python3 benchmarks/verify_solutions.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    old = _before(args.before) if args.before else _old(args.records)
    print(report(out, list(done.values()), old, cmd, runs if args.repeat > 1 else ()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
