"""What one verification costs the search beyond the candidate's own work: a child started as a
fresh interpreter against a child forked from the fork-server template, for the eager and the
inductor baseline of a small task (median wall seconds of ``evaluate``, the template already up).

    PYTHONPATH=. python3 benchmarks/verify_overhead.py [--device cpu] [--repeat 3] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torch_cudal1.baselines import baseline_candidate  # noqa: E402
from torch_cudal1.task import Task  # noqa: E402
from torch_cudal1.verify import evaluate  # noqa: E402

TASK = ROOT / "tests" / "adversarial" / "tasks" / "linear_act.py"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/verify_overhead/<device>")
    args = ap.parse_args(argv)
    task = Task.from_file(TASK)
    rows = []
    for name in ("eager", "inductor"):
        row = {"baseline": name}
        for how, flag in (("fresh interpreter", "0"), ("forked from template", "1")):
            os.environ["CUDAL1_VERIFY_FORKSERVER"] = flag
            evaluate(task, baseline_candidate(task, name), device=args.device, trials=2)  # warm
            walls = []
            for _ in range(args.repeat):
                t0 = time.monotonic()
                v, _ = evaluate(task, baseline_candidate(task, name), device=args.device, trials=2)
                walls.append(time.monotonic() - t0)
                assert v.accepted, v
            row[how] = statistics.median(walls)
        rows.append(row)
    md = [f"## verifier child overhead ({args.device}, {TASK.name}, median of {args.repeat})", "",
          "| baseline | fresh interpreter s | forked from template s |", "|---|---|---|"]
    md += [f"| {r['baseline']} | {r['fresh interpreter']:.2f} | {r['forked from template']:.2f} |"
           for r in rows]
    text = "\n".join(md) + "\n"
    from benchmarks.paths import results_dir
    args.out = args.out or str(results_dir("verify_overhead", args.device))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"verify_overhead_{args.device}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
