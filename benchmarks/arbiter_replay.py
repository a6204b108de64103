"""The arbiter's recorded decisions replayed through its current rule (``arbiter.choose``).

    PYTHONPATH=. python3 benchmarks/arbiter_replay.py benchmarks/results/real_models/h200

Reads every ``real_models.json`` below the given folders (``benchmarks/real_models.py`` keeps the
arbiter's decisions, with each candidate's per-round times, under ``arbiter``) and prints, per
decision, what was served then and what the rule in this checkout would serve on the same
measurements. No timing runs: it shows what a change of the rule does to measured cases.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from torch_cudal1.serve import arbiter  # noqa: E402
from torch_cudal1.contracts import Timing  # noqa: E402


def replay(decision: dict) -> str:
    times = {k: Timing(decision["ms"][k], decision["spread_ms"][k], 1,
                       extra={"rounds_ms": decision.get("rounds_ms", {}).get(k)})
             for k in decision["ms"]}
    return arbiter.choose(times)


def main(argv=None) -> int:
    folders = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    print("| run | model | dtype | served then | rule now |")
    print("|---|---|---|---|---|")
    for folder in folders:
        for f in sorted(folder.rglob("real_models.json")):
            for rec in json.loads(f.read_text()):
                for d in rec.get("arbiter", []):
                    print(f"| {f.parent.relative_to(folder.parent)} | {rec['model']} | {rec['dtype']} "
                          f"| {d['choice']} | {replay(d)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
