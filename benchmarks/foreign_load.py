"""Timings beside a busy process: in the caller's session and in another one.

    PYTHONPATH=. python3 benchmarks/foreign_load.py [--against REV]
                                                    [--out benchmarks/results/foreign_load/cpu]

A small convolutional net (many short ops, each a parallel region of torch's CPU threads) is
called eagerly in this process and verified and timed by ``evaluate`` (eager as the candidate),
three ways: on a quiet host; beside one busy process (a spinning loop) started in this process's
session; beside one started in a session of its own (``setsid``: a shell in another terminal, a
job of another user). Where the kernel groups scheduling by session (``/proc/sys/kernel/
sched_autogroup_enabled``), a session shares the CPUs with every other session as one group,
and torch's threads wait at each op's barrier for a thread the scheduler gave to the other
group. The verifier's processes stay in the caller's session (``verify/process.py: own_group``),
so their timings see the host as the caller's own calls do. ``--against REV`` measures the
package at another git revision the same way in the same run. Writes ``README.md`` and
``rows.json`` under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Twelve 3x3 conv + batch norm + ReLU blocks on a small image: a mobile net's shape."""

    def __init__(self):
        super().__init__()
        layers, c = [], 3
        for i in range(12):
            layers += [nn.Conv2d(c, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU()]
            c = 32
        self.net = nn.Sequential(*layers).eval()

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(2, 3, 64, 64)]


def get_init_inputs():
    return []
'''
SPIN = "while True:\n    pass\n"


def _busy(new_session: bool) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=new_session,
                            stdin=subprocess.DEVNULL)


def _eager_ms(n: int = 20) -> float:
    import torch
    ns: dict = {}
    exec(compile(TASK, "task", "exec"), ns)
    torch.manual_seed(0)
    m, x = ns["Model"](), ns["get_inputs"]()
    ts = []
    with torch.no_grad():
        for _ in range(3):
            m(*x)
        for _ in range(n):
            t0 = time.perf_counter()
            m(*x)
            ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)[n // 2]


def _verify() -> dict:
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    task = Task(TASK, name="conv_stack")
    t0 = time.monotonic()
    verdict, timing = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    row = {"verdict": verdict.reason, "wall_s": round(time.monotonic() - t0, 1)}
    if timing is not None:
        row.update(median_ms=round(timing.median_ms, 3),
                   reference_ms=round(timing.extra.get("reference_ms") or 0, 3),
                   busy_batches=timing.extra.get("host_busy_batches", 0))
    return row


def _measure() -> list[dict]:
    rows = []
    for name, session in (("quiet host", None), ("a busy process in this session", False),
                          ("a busy process in another session", True)):
        proc = _busy(session) if session is not None else None
        try:
            time.sleep(0.5)
            row = {"condition": name, "eager_ms": round(_eager_ms(), 3), **_verify()}
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def _measure_at(rev: str) -> list[dict]:
    """The same measurement with the package as it was at ``rev``."""
    from benchmarks.revisions import rows_at
    return rows_at(rev, Path(__file__), ["--rows-only"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/foreign_load/cpu"))
    ap.add_argument("--against", default="", help="a git revision measured the same way, "
                    "in the same run")
    ap.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rows_only:
        print(json.dumps(_measure()))
        return 0
    try:
        autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        autogroup = "absent"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "this tree"
    runs = [(head, _measure())]
    if args.against:
        runs.append((args.against, _measure_at(args.against)))
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps(
        [{"revision": rev, **r} for rev, rows in runs for r in rows], indent=1) + "\n")
    command = "PYTHONPATH=. python3 benchmarks/foreign_load.py" + (
        f" --against {args.against}" if args.against else "")
    lines = ["# Timings beside a busy process", "", f"`{command}` at {head}", "",
             f"torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"{torch.get_num_threads()} torch threads, sched_autogroup_enabled={autogroup}. "
             "Twelve conv + batch norm + ReLU blocks on a 2x3x64x64 input; eager called in this "
             "process (median of 20 calls), then verified and timed as a candidate by "
             "`evaluate` (its median, the reference's median in the judge, and the "
             "verification's wall time). Each revision measured in the same run, one after "
             "the other.", "",
             "| package at | condition | eager here, ms | verifier's timing, ms | "
             "reference in the judge, ms | verification wall, s | verdict |",
             "|---|---|---|---|---|---|---|"]
    for rev, rows in runs:
        for r in rows:
            lines.append(f"| {rev} | {r['condition']} | {r['eager_ms']} | "
                         f"{r.get('median_ms', '-')} | {r.get('reference_ms', '-')} | "
                         f"{r['wall_s']} | {r['verdict']} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
