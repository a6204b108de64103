"""What a max-autotune candidate's verification cost against how many distinct matrix-product and
convolution shapes its graph gives inductor to tune: every KernelBench record with a max-autotune
attempt, its task traced again on the CPU (``max_autotune.tuned_shapes``), beside the attempt's
verification seconds on the device or its timeout. The built-in engine's ``auto`` leaves
max-autotune out of graphs with more shapes than its verification limit allows
(``max_autotune.SECONDS_PER_SHAPE``); this table is where that figure comes from.

    PYTHONPATH=. python3 benchmarks/autotune_cost.py [--results R/results.jsonl] [--data D] [--out F]

prints one JSON line per record (resumable through --out, a jsonl it appends to), then a markdown
table sorted by shape count.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torch_cudal1.engines.builtin import max_autotune  # noqa: E402
from torch_cudal1.graph.trace import trace_task  # noqa: E402
from torch_cudal1.task import Task  # noqa: E402
from benchmarks.trace_vs_records import measure_tasks  # noqa: E402

ORIGINS = ("builtin:inductor-max-autotune", "builtin:tf32+inductor-max-autotune")


def _alarm(*_):
    raise TimeoutError("trace took over 60 s")


def outcome(rec: dict, origin: str) -> str | None:
    """The attempt's verification seconds ('12.3'), or why it has none ('timeout')."""
    for a in rec.get("attempts") or []:
        if a.get("origin") == origin:
            verify_s = (a.get("phases") or {}).get("verify_s")
            return f"{verify_s:.1f}" if a.get("reason") == "ok" and verify_s else a.get("reason")
    return None


def measure(row: dict, rec: dict) -> dict:
    out = {"id": rec["id"], **{o.removeprefix("builtin:"): outcome(rec, o) for o in ORIGINS}}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        gm = trace_task(Task(source=row["ref_code"], name=rec["id"]), "cpu").gm
        out["shapes"] = max_autotune.tuned_shapes(gm)
    except Exception as e:  # noqa: BLE001 - an untraceable task is a finding, not a failure
        out["error"] = f"{type(e).__name__}: {str(e)[:150]}"
    finally:
        signal.alarm(0)
    return out


def table(found: list[dict]) -> str:
    lines = ["| task | tuned shapes | max-autotune verify s | tf32+max-autotune verify s |",
             "|---|---|---|---|"]
    for r in sorted(found, key=lambda r: (r.get("shapes", -1), r["id"])):
        lines.append(f"| {r['id']} | {r.get('shapes', r.get('error', '-'))} | "
                     f"{r.get('inductor-max-autotune') or '-'} | "
                     f"{r.get('tf32+inductor-max-autotune') or '-'} |")
    timeouts = [r.get("shapes") for r in found if "timeout" in (r.get(o.removeprefix("builtin:"))
                                                             for o in ORIGINS)]
    ok = [r.get("shapes") for r in found if r.get("inductor-max-autotune") not in (None, "timeout")]
    lines.append(f"\nVerified in time: {len(ok)} records, at most {max(ok, default=0)} shapes. "
                 f"Timed out: {len(timeouts)}, shapes {sorted(t for t in timeouts if t is not None)}.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/kernelbench/h200/results.jsonl"))
    ap.add_argument("--data", default=str(ROOT / ".carry/kernelbench/cudal1_h100_dev.jsonl"))
    ap.add_argument("--out", default="autotune_cost.jsonl")
    args = ap.parse_args(argv)
    found = measure_tasks(args.results, args.data, Path(args.out), measure,
                          wanted=lambda rec: any(outcome(rec, o) for o in ORIGINS)
                          and (rec.get("bytes") or 0) <= 1.5e9)   # inputs made for real here
    print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
