"""Does the verifier's rule on elements far below an output's scale (``compare.LOST``) reject honest
code? Every KernelBench task in the data is run here in float32 (the native reference), in
float64 (the truth) and compiled by inductor (an honest implementation in another order of float32
arithmetic), and the two float32 answers are compared with the truth at each precision; the table
counts the elements each loses and the comparison's verdict. A verdict other than ``ok`` for
inductor is a false rejection, unless the native reference loses as much.

    PYTHONPATH=. python3 benchmarks/lost_elements_scan.py --out benchmarks/results/lost_elements_scan/cpu

Tasks whose float64 run takes longer than ``--task-limit-s`` (signal alarm) or whose inputs hold
more than ``--max-elements`` are skipped and listed.
"""
from __future__ import annotations

import argparse
import copy
import json
import signal
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.paths import kernelbench_data  # noqa: E402
from torch_cudal1.task import load_source  # noqa: E402
from torch_cudal1.verify.compare import compare  # noqa: E402

PRECISIONS = ("highest", "high")


class TaskTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TaskTimeout


def _double(xs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]


def _elements(xs) -> int:
    return sum(x.numel() for x in xs if isinstance(x, torch.Tensor))


def scan_task(row: dict, limit_s: float, max_elements: int) -> dict:
    tid = f"L{row['level_id']}_{row['task_id']}"
    out = {"id": tid}
    mod = load_source(row["ref_code"], f"kb_{tid}")
    torch.manual_seed(0)
    init = mod.get_init_inputs()
    model = mod.Model(*init).eval()
    torch.manual_seed(1)
    xs = mod.get_inputs()
    if _elements(xs) > max_elements:
        return {**out, "skipped": f"inputs of {_elements(xs)} elements"}
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        with torch.no_grad():
            native = model(*xs)
            hi = copy.deepcopy(model).double()(*_double(xs))
            compiled = torch.compile(model, backend="inductor")
            ind = compiled(*xs)
    except TaskTimeout:
        return {**out, "skipped": f"over {limit_s:.0f} s"}
    except Exception as e:  # noqa: BLE001 - a task that does not run here is listed, not scanned
        first = (str(e).strip().splitlines() or [""])[0]
        return {**out, "skipped": f"{type(e).__name__}: {first[:120]}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        torch._dynamo.reset()
    for p in PRECISIONS:
        reason, detail, stats = compare(native, ind, hi, precision=p)
        out[p] = {"reason": reason, "lost": stats.get("lost"), "detail": detail[:200]}
    return out


def scan_all(scan, description: str, default_out: str):
    """Parse the scans' common options, run ``scan(row, task_limit_s, max_elements)`` over the
    KernelBench rows until ``--limit-s``, one record a line in ``records.jsonl``: (args, rows,
    records, the output folder)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", default=str(kernelbench_data()))
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--task-limit-s", type=float, default=60.0)
    ap.add_argument("--max-elements", type=int, default=1 << 26)
    ap.add_argument("--limit-s", type=float, default=3600.0, help="stop starting tasks after this")
    ap.add_argument("--levels", default="1,2,3")
    args = ap.parse_args()
    levels = {int(x) for x in args.levels.split(",")}
    rows = [json.loads(line) for line in open(args.data)]
    rows = [r for r in rows if r["level_id"] in levels]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    recs = []
    with open(out / "records.jsonl", "w") as f:
        for r in rows:
            if time.monotonic() - t0 > args.limit_s:
                break
            rec = scan(r, args.task_limit_s, args.max_elements)
            recs.append(rec)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(json.dumps(rec)[:200], flush=True)
    return args, rows, recs, out


def main() -> None:
    _, rows, recs, out = scan_all(scan_task, __doc__.split("\n\n")[0],
                                  "benchmarks/results/lost_elements_scan/cpu")
    scanned = [r for r in recs if "skipped" not in r]
    lines = ["# Lost elements: honest inductor code against the verifier's rule (CPU)", "",
             "```bash", " ".join(["PYTHONPATH=. python3 benchmarks/lost_elements_scan.py"]
                                 + sys.argv[1:]), "```", "",
             f"{len(scanned)} tasks scanned, {len(recs) - len(scanned)} skipped, "
             f"{len(rows) - len(recs)} not reached (time limit).", "",
             "| precision | inductor ok | rejected as lost elements | rejected otherwise | "
             "most elements lost |", "|---|---|---|---|---|"]
    for p in PRECISIONS:
        ok = sum(r[p]["reason"] == "ok" for r in scanned)
        lost = [r for r in scanned if r[p]["reason"] != "ok" and "half their value" in
                r[p]["detail"]]
        other = len(scanned) - ok - len(lost)
        most = max((r[p]["lost"] or 0 for r in scanned if r[p]["reason"] == "ok"), default=0)
        lines.append(f"| {p} | {ok} | {len(lost)} | {other} | {most} |")
    for p in PRECISIONS:
        bad = [r for r in scanned if r[p]["reason"] != "ok"]
        if bad:
            lines += ["", f"Not ok at `{p}`:", ""]
            lines += [f"- {r['id']}: {r[p]['reason']}: {r[p]['detail']}" for r in bad]
    write_readme(out, lines, recs, "Skipped")


def write_readme(out: Path, lines: list[str], recs: list[dict], label: str) -> None:
    """The table's ``lines``, then the tasks not scanned (``label``), as ``out/README.md``."""
    skipped = [r for r in recs if "skipped" in r]
    if skipped:
        lines = lines + ["", f"{label}: " + ", ".join(f"{r['id']} ({r['skipped']})"
                                                     for r in skipped)]
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
