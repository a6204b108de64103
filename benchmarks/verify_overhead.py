"""What one verification costs, per candidate: wall seconds of ``evaluate`` (build, checks and
timing) for a few small tasks and candidates, with this checkout's verifier and, with
``--against REV``, with the verifier of another revision of the repository (checked out into a
temporary worktree and run the same way, in a process of its own).

    PYTHONPATH=. python3 benchmarks/verify_overhead.py [--device cpu] [--repeat 3] \\
        [--against 68b6004] [--out DIR (default benchmarks/results/verify_overhead/<device>)]

Each row: the median over ``--repeat`` runs (after one warm-up run, so the fork-server template
is up), and the phases of the last run as the verdict reports them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADV = ROOT / "tests" / "adversarial"
CASES = [("linear_act", "baseline:eager"), ("linear_act", "honest_fused_linear.py"),
         ("conv2d", "baseline:eager"), ("diag_matmul", "honest_diag_broadcast.py")]


def measure(device: str, repeat: int, time_budget_s: float) -> list[dict]:
    """In this process: the verifier importable as ``torch_cudal1`` (this checkout, or another
    revision's through PYTHONPATH)."""
    try:
        from torch_cudal1.engines.baselines import baseline_candidate
    except ImportError:   # a revision before the package was cut by concern
        from torch_cudal1.baselines import baseline_candidate
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    os.environ.setdefault("CUDAL1_VERIFY_FORKSERVER", "1")
    rows = []
    for task_name, cand_name in CASES:
        task = Task.from_file(ADV / "tasks" / f"{task_name}.py")
        if cand_name.startswith("baseline:"):
            cand = baseline_candidate(task, cand_name.split(":", 1)[1])
        else:
            cand = Candidate((ADV / cand_name).read_text(), origin="bench:" + cand_name)
        walls, verdict, timing = [], None, None
        for i in range(repeat + 1):
            t0 = time.monotonic()
            verdict, timing = evaluate(task, cand, device=device, trials=3,
                                       time_budget_s=time_budget_s)
            if i:
                walls.append(time.monotonic() - t0)
        rows.append({"task": task_name, "candidate": cand_name, "verdict": verdict.reason,
                     "wall_s": statistics.median(walls),
                     "phases": verdict.stats.get("phases", {}),
                     "median_ms": timing.median_ms if timing else None,
                     "n": timing.n if timing else None})
    return rows


def _measure_in(path: str, args) -> list[dict]:
    """``measure`` in a process whose ``torch_cudal1`` is the one in ``path``."""
    code = (f"import json,sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"import verify_overhead as v; "
            f"print('ROWS' + json.dumps(v.measure({args.device!r}, {args.repeat}, "
            f"{args.time_budget_s})))")
    env = dict(os.environ, PYTHONPATH=path)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=path, capture_output=True,
                       text=True)
    if r.returncode:
        raise SystemExit(f"measuring {path} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.split("ROWS", 1)[1])


def _other(rev: str, args) -> list[dict]:
    if os.path.isdir(rev):   # a copy of another revision's torch_cudal1 (a machine without git)
        return _measure_in(os.path.abspath(rev), args)
    with tempfile.TemporaryDirectory(prefix="cudal1-rev-") as d:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", d, rev],
                       check=True, capture_output=True)
        try:
            return _measure_in(d, args)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", d],
                           capture_output=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="default: cuda where a GPU is, else cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--time-budget-s", type=float, default=2.0,
                    help="each candidate's timing budget (the search's default)")
    ap.add_argument("--against", default=None,
                    help="a git revision to compare with, or a folder holding another revision's "
                         "torch_cudal1")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = args.device
    if dev.startswith("cuda"):
        import torch
        from benchmarks.paths import gpu_short_name
        dev = gpu_short_name(torch.cuda.get_device_name(torch.device(args.device)))
    out = Path(args.out or ROOT / "benchmarks" / "results" / "verify_overhead" / dev)
    now = measure(args.device, args.repeat, args.time_budget_s)
    before = _other(args.against, args) if args.against else None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "this checkout"
    cmd = "PYTHONPATH=. python3 benchmarks/verify_overhead.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    md = [f"# Verification cost per candidate ({args.device})", "",
          f"`{cmd.strip()}` at {head}; median of {args.repeat} runs, wall seconds of `evaluate` "
          f"(timing budget {args.time_budget_s} s).", ""]
    cols = "| task | candidate | verdict | wall s |" + (" before s |" if before else "") + \
        " build s | verify s | time s | timed calls |"
    md += [cols, "|" + "---|" * (cols.count("|") - 1)]
    for i, r in enumerate(now):
        ph = r["phases"]
        line = f"| {r['task']} | {r['candidate']} | {r['verdict']} | {r['wall_s']:.2f} |"
        if before:
            line += f" {before[i]['wall_s']:.2f} |"
        line += (f" {ph.get('build_s', 0):.2f} | {ph.get('verify_s', 0):.2f} | "
                 f"{ph.get('time_s', 0):.2f} | {r['n']} |")
        md.append(line)
    text = "\n".join(md) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text(text)
    (out / "rows.json").write_text(json.dumps({"now": now, "before": before}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
