"""The fused-attention rewrite on KernelBench tasks: the rewritten candidate against eager and
inductor, through the verifier and timing harness (one line per task, JSON under --out).

    PYTHONPATH=. python3 benchmarks/attention_check.py --data $CUDAL1_KERNELBENCH \\
        --ids L3_43,L3_31 --device cuda --out $OUT
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from torch_cudal1.engines.baselines import baseline_candidate  # noqa: E402
from torch_cudal1.engines.base import SearchContext  # noqa: E402
from torch_cudal1.engines.builtin import BuiltinEngine  # noqa: E402
from torch_cudal1.options import Options  # noqa: E402
from torch_cudal1.task import Task  # noqa: E402
from torch_cudal1.verify import evaluate  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--ids", default="L3_43,L3_31")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--baselines", default="eager,inductor")
    ap.add_argument("--out", default=".")
    args = ap.parse_args(argv)
    rows = {f"L{r['level_id']}_{r['task_id']}": r
            for r in map(json.loads, Path(args.data).read_text().splitlines())}
    out = Path(args.out) / "attention_check.jsonl"
    for tid in args.ids.split(","):
        task = Task(rows[tid]["ref_code"], name=tid)
        cands = [c for c in BuiltinEngine(Options.resolve({})).propose(
            task, [], SearchContext(device=args.device, round=1, samples=2))
            if "fused_attention" in c.origin and "+" not in c.origin.split(")")[-1]]
        cands += [baseline_candidate(task, b) for b in args.baselines.split(",")]
        for c in cands:
            verdict, timing = evaluate(task, c, device=args.device, trials=2, time_it=True)
            rec = {"task": tid, "origin": c.origin, "verdict": verdict.reason,
                   "ms": timing.median_ms if timing else None,
                   "spread_ms": timing.spread_ms if timing else None, "detail": verdict.detail[:200]}
            print(json.dumps(rec), flush=True)
            with out.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
