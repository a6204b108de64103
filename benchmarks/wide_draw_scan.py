"""Does the verifier's wide draw (``judge.wide_check``: the task's floating inputs times
``judge.WIDE``) reject honest code, and on how many tasks can it judge at all? Every KernelBench
task in the data gets one draw, widened: the native reference in float32, the truth in float64,
and inductor's compile of the task (an honest implementation with other formulas: its own
decompositions, vectorised exp and log). Where the native reference holds against float64 there
(``compare.reference_holds``) the task is checked, and inductor's answer is compared as the judge
compares a candidate's (stricter: without ``compare.within_range``'s allowance for elements past
half the dtype's largest value); elsewhere the judge skips the wide draw, and so does this scan. A
verdict other than ``ok`` for inductor on a checked task is a false rejection.

    PYTHONPATH=. python3 benchmarks/wide_draw_scan.py --out benchmarks/results/wide_draw_scan/cpu

Tasks whose float64 run takes longer than ``--task-limit-s`` or whose inputs hold more than
``--max-elements`` are skipped and listed.
"""
from __future__ import annotations

import copy
import signal
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.lost_elements_scan import (PRECISIONS, TaskTimeout, _alarm,  # noqa: E402
                                           _double, _elements, scan_all,
                                           write_readme)
from torch_cudal1.harness.calls import widen  # noqa: E402
from torch_cudal1.task import load_source  # noqa: E402
from torch_cudal1.verify.compare import compare, reference_holds  # noqa: E402
from torch_cudal1.verify.judge import WIDE  # noqa: E402


def scan_task(row: dict, limit_s: float, max_elements: int) -> dict:
    tid = f"L{row['level_id']}_{row['task_id']}"
    out = {"id": tid}
    mod = load_source(row["ref_code"], f"kb_{tid}")
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).eval()
    torch.manual_seed(1)
    xs = mod.get_inputs()
    if _elements(xs) > max_elements:
        return {**out, "skipped": f"inputs of {_elements(xs)} elements"}
    if not widen(xs, WIDE):
        return {**out, "skipped": "no floating input"}
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        with torch.no_grad():
            native = model(*xs)
            hi = copy.deepcopy(model).double()(*_double(xs))
            holds = {p: reference_holds(native, hi, p) for p in PRECISIONS}
            ind = None
            if any(h[0] == "ok" for h in holds.values()):
                ind = torch.compile(model, backend="inductor")(*xs)
    except TaskTimeout:
        return {**out, "skipped": f"over {limit_s:.0f} s"}
    except Exception as e:  # noqa: BLE001 - a task that does not run here is listed, not scanned
        first = (str(e).strip().splitlines() or [""])[0]
        return {**out, "skipped": f"{type(e).__name__}: {first[:120]}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        torch._dynamo.reset()
    for p in PRECISIONS:
        reason, detail, _ = holds[p]
        if reason != "ok":
            out[p] = {"wide": "skipped", "why": f"{reason}: {detail[:160]}"}
            continue
        reason, detail, stats = compare(native, ind, hi, precision=p, tails=False)
        out[p] = {"wide": "checked", "reason": reason, "rel_error": stats.get("rel_error"),
                  "detail": detail[:200]}
    return out


def main() -> None:
    _, rows, recs, out = scan_all(scan_task, __doc__.split("\n\n")[0],
                                  "benchmarks/results/wide_draw_scan/cpu")
    scanned = [r for r in recs if "skipped" not in r]
    lines = [f"# Wide draw (inputs times {WIDE:g}): honest inductor code against the verifier "
             "(CPU)", "", "```bash", " ".join(["PYTHONPATH=. python3 benchmarks/wide_draw_scan.py"]
                                               + sys.argv[1:]), "```", "",
             f"torch {torch.__version__}. {len(scanned)} tasks scanned, "
             f"{len(recs) - len(scanned)} skipped, {len(rows) - len(recs)} not reached "
             "(time limit).", "",
             "| precision | checked (reference holds) | skipped (reference off) | inductor ok | "
             "inductor rejected |", "|---|---|---|---|---|"]
    for p in PRECISIONS:
        checked = [r for r in scanned if r[p]["wide"] == "checked"]
        ok = sum(r[p]["reason"] == "ok" for r in checked)
        lines.append(f"| {p} | {len(checked)} | {len(scanned) - len(checked)} | {ok} | "
                     f"{len(checked) - ok} |")
    for p in PRECISIONS:
        bad = [r for r in scanned if r[p]["wide"] == "checked" and r[p]["reason"] != "ok"]
        if bad:
            lines += ["", f"Inductor rejected at `{p}`:", ""]
            lines += [f"- {r['id']}: {r[p]['reason']}: {r[p]['detail']}" for r in bad]
    off = [r for r in scanned if r["highest"]["wide"] == "skipped"]
    if off:
        lines += ["", "Skipped because the float32 reference is off there (at `highest`):", ""]
        lines += [f"- {r['id']}: {r['highest']['why']}" for r in off]
    write_readme(out, lines, recs, "Not scanned")


if __name__ == "__main__":
    main()
