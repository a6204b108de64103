"""Every cudal1 column of recorded real_models.py runs against the fastest baseline, paired by
round (``real_models.paired_ratio``), and where recorded the same from the warm-start process
(``real_models.fresh_ratio``): one markdown table from one or more ``real_models.json``.

    PYTHONPATH=. python3 benchmarks/real_models_table.py benchmarks/results/real_models/h200/*/real_models.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.real_models import drift_note, fresh_ratio, modes_host_drift, paired_ratio  # noqa: E402

VARIANTS = ("cudal1", "cudal1_graphed", "cudal1_plain")
MODES = ("reduce_overhead", "max_autotune")   # torch.compile's CUDA-graph modes, where recorded


def table(recs: list[dict]) -> str:
    cols = [v for v in VARIANTS if any(v in (r.get("rounds_ms") or {}) for r in recs)]
    modes = [m for m in MODES if any(r.get(m + "_ms") is not None for r in recs)]
    fresh = any(r.get("warm_rounds_ms") for r in recs)
    head = ["model", "dtype", "float32 precision", "eager ms", "inductor ms"] + [f"{m} ms" for m in modes] \
        + [f"{v} ms" for v in cols] + [f"{v} / best (paired)" for v in cols] \
        + (["cudal1 / best (fresh processes)"] if fresh else []) \
        + (["modes' inductor / here"] if modes else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in recs:
        batch = r.get("batch")
        name = r["model"] + (f" (batch {batch})" if batch not in (None, 32) else "")
        # records made before the field: TF32 candidates were then proposed at any setting
        cells = [name, r["dtype"], r.get("precision", "not recorded")] + [f"{x:.3f}" if (x := r.get(k + "_ms")) is not None
                                            else "-" for k in ("eager", "inductor", *modes, *cols)]
        cells += [f"{x:.3f}" if (x := paired_ratio(r, v)) is not None else "-" for v in cols]
        if fresh:
            cells.append(f"{x:.3f}" if (x := fresh_ratio(r)) is not None else "-")
        if modes:
            cells.append(f"{x:.3f}" if (x := modes_host_drift(r)) is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + drift_note(recs)


def main(argv=None) -> int:
    recs = [r for p in (argv if argv is not None else sys.argv[1:])
            for r in json.loads(Path(p).read_text())]
    print(table(recs), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
