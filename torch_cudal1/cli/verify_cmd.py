"""``cudal1 verify TASK.py CANDIDATE.py [--device DEVICE] [--trials N] [--speedup] [--json]``

Exit 0 when the candidate is accepted, 1 when rejected, 2 on a usage or setup error. With
``--json`` one JSON object: {"verdict": "accepted"|"rejected", "reason", "detail", "median_ms",
"spread_ms", "timing", "stats", "speedup_vs_reference"}; the last is null unless ``--speedup``
timed the reference right after the candidate, in the candidate's own child.
"""
from __future__ import annotations

import json
import os
import sys


def register(subparsers) -> None:
    from ._common import add_device, add_parser
    p = add_parser(subparsers, "verify", __doc__,
                   help="verify a candidate ModelNew against a KernelBench task")
    p.add_argument("task", metavar="TASK.py", help="task file (class Model, get_inputs, "
                                                   "get_init_inputs)")
    p.add_argument("candidate", metavar="CANDIDATE.py", help="candidate file (class ModelNew)")
    add_device(p)
    p.add_argument("--trials", type=int, default=3, help="fresh input draws (default 3)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="wall-clock limit of the child in seconds (default 300)")
    p.add_argument("--no-time", action="store_true", help="verify only, do not time")
    p.add_argument("--check-stride", action="store_true", help="require the reference's strides")
    p.add_argument("--speedup", action="store_true",
                   help="also time the reference right after the candidate, in the same child "
                        "and under the same device lock, and report the ratio")
    p.add_argument("--precision", choices=("highest", "high", "medium"), default=None,
                   help="float32 precision the tolerances follow (default: torch's setting, "
                        "'highest' unless changed): 'highest' refuses TF32/fp16/bf16 products "
                        "on float32 data, 'high' allows TF32-level error")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..contracts import Candidate
    from ..origin import Origin
    from ..verify import evaluate
    from ._common import build_dir, check_device, load_task, read_file
    if args.trials < 1:
        from ._common import UsageError
        raise UsageError("--trials must be at least 1")
    task = load_task(args.task)
    source = read_file(args.candidate, "candidate file")
    device = check_device(args.device)
    # One candidate: a fork-server template (started in the background) would never be used.
    os.environ.setdefault("CUDAL1_VERIFY_FORKSERVER", "0")
    verdict, timing = evaluate(task, Candidate(source, origin=Origin("file", args.candidate)),
                               device=device, trials=args.trials, timeout_s=args.timeout,
                               time_it=not args.no_time, check_stride=args.check_stride,
                               pair_reference=args.speedup, precision=args.precision,
                               build_cache_dir=build_dir(args))
    out = {"verdict": "accepted" if verdict.accepted else "rejected", "reason": verdict.reason,
           "detail": verdict.detail,
           "median_ms": timing.median_ms if timing else None,
           "spread_ms": timing.spread_ms if timing else None,
           "timing": timing.to_json() if timing else None, "stats": verdict.stats,
           "device": device, "task": args.task, "candidate": args.candidate,
           "speedup_vs_reference": timing.paired_speedup if timing else None}
    if args.json:
        print(json.dumps(out, default=str))
    else:
        line = f"{out['verdict']} ({verdict.reason})"
        if verdict.detail:
            line += f": {verdict.detail}"
        print(line)
        if timing:
            print(f"time: {timing.median_ms:.4f} ms median, spread {timing.spread_ms:.4f} ms "
                  f"(IQR, n={timing.n}, {timing.method})")
            if timing.paired_speedup:
                print(f"reference: {timing.extra['paired_ref_ms']:.4f} ms median, timed right "
                      f"after it: x{timing.paired_speedup:.2f}")
    sys.stdout.flush()
    return 0 if verdict.accepted else 1
