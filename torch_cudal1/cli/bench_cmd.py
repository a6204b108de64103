"""``cudal1 bench TASK.py [CANDIDATE.py ...] [--device DEVICE] [--json]``

Times the eager reference, the inductor baseline and each candidate in the same harness (each is
verified first: an unverified candidate is never timed) and prints median, spread and speedups.
Exit 0 when everything was accepted, 1 when a candidate or baseline was rejected, 2 on a usage
or setup error.
"""
from __future__ import annotations

import json


def register(subparsers) -> None:
    from ._common import add_device, add_parser
    p = add_parser(subparsers, "bench", __doc__,
                   help="time eager, inductor and candidates on a task")
    p.add_argument("task", metavar="TASK.py", help="task file (class Model, get_inputs, "
                                                   "get_init_inputs)")
    p.add_argument("candidates", metavar="CANDIDATE.py", nargs="*",
                   help="candidate files (class ModelNew)")
    add_device(p)
    p.add_argument("--trials", type=int, default=3, help="fresh input draws (default 3)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="wall-clock limit of each child in seconds (default 600)")
    p.add_argument("--baselines", default="eager,inductor",
                   help="comma-separated baselines (eager, inductor, inductor-max-autotune, ...)")
    p.add_argument("--cuda-graph", action="store_true", help="also time CUDA-graph replays")
    p.add_argument("--native", action="store_true",
                   help="build the native helpers (L2 flush kernel, C++ checker) first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..engines.baselines import baseline_candidate
    from ..contracts import Candidate
    from ..origin import Origin
    from ..verify import evaluate
    from ._common import UsageError, build_dir, check_device, load_task, read_file
    task = load_task(args.task)
    cands = [Candidate(read_file(c, "candidate file"), origin=Origin("file", c))
             for c in args.candidates]
    device = check_device(args.device)
    try:
        entries = [(n, baseline_candidate(task, n)) for n in args.baselines.split(",") if n.strip()]
    except ValueError as e:
        raise UsageError(str(e)) from None
    entries += [(c, cand) for c, cand in zip(args.candidates, cands)]
    if args.native:
        from ..bench import native
        native.build()
    rows, refs = [], {}
    for name, cand in entries:
        v, t = evaluate(task, cand, device=device, trials=args.trials, timeout_s=args.timeout,
                        cuda_graph=args.cuda_graph, build_cache_dir=build_dir(args))
        row = {"name": name, "verdict": "accepted" if v.accepted else "rejected",
               "reason": v.reason, "detail": v.detail,
               "median_ms": t.median_ms if t else None, "spread_ms": t.spread_ms if t else None,
               "n": t.n if t else 0, "timing": t.to_json() if t else None}
        if t and name in ("eager", "inductor"):
            refs[name] = t.median_ms
        rows.append(row)
    for row in rows:
        for ref in ("eager", "inductor"):
            row[f"speedup_vs_{ref}"] = (refs[ref] / row["median_ms"]) if (
                ref in refs and row["median_ms"]) else None
    ok = all(r["verdict"] == "accepted" for r in rows)
    if args.json:
        print(json.dumps({"task": args.task, "device": device, "rows": rows,
                          "eager_ms": refs.get("eager"), "inductor_ms": refs.get("inductor")},
                         default=str))
    else:
        print(f"{'name':40} {'verdict':22} {'median ms':>11} {'spread ms':>10} {'vs eager':>9} "
              f"{'vs inductor':>11}")
        for r in rows:
            verdict = "accepted" if r["verdict"] == "accepted" else f"rejected ({r['reason']})"
            med = f"{r['median_ms']:.4f}" if r["median_ms"] is not None else "-"
            spr = f"{r['spread_ms']:.4f}" if r["spread_ms"] is not None else "-"
            se = f"x{r['speedup_vs_eager']:.2f}" if r["speedup_vs_eager"] else "-"
            si = f"x{r['speedup_vs_inductor']:.2f}" if r["speedup_vs_inductor"] else "-"
            print(f"{r['name'][-40:]:40} {verdict:22} {med:>11} {spr:>10} {se:>9} {si:>11}")
            if r["verdict"] != "accepted" and r["detail"]:
                print(f"    {r['detail'].splitlines()[0][:150]}")
    return 0 if ok else 1
