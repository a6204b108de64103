"""Which KernelBench records were searched without candidates the built-in engine proposes now:
each task of the data file is traced on the CPU, one at a time, and the candidate families the
engine would propose on a GPU from the graph (rewrites that fire, max-autotune, TF32 products,
cuDNN autotuning, the channels-last layout) are compared with the attempts of its latest record,
and so are the CUDA-graph wraps its round 2 proposes now from the record's own times. A record
that lacks one was searched before that family existed, or lost its graph on the device (a trace
that failed there); either way its figure is stale until the task runs again. Models with
recurrent layers are traced but not called stale for what their trace shows: on a GPU their graph
is another (one cuDNN call per layer).

    PYTHONPATH=. python3 benchmarks/trace_vs_records.py [--results R/results.jsonl] [--data D]

prints one JSON line per task, resumable through --out (a jsonl it appends to), then per family
the stale tasks and one ``--ids`` list of them all, the slowest (by eager time) first.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict  # noqa: E402
from torch_cudal1.engines.base import SearchContext  # noqa: E402
from torch_cudal1.engines.builtin import (  # noqa: E402
    BuiltinEngine, channels_last, cudnn_benchmark, max_autotune, tf32)
from torch_cudal1.graph.trace import trace_task  # noqa: E402
from torch_cudal1.options import Options  # noqa: E402
from torch_cudal1.rewrites import (  # noqa: E402
    NAMES, TF32_ONLY, apply_rewrites, attention_tf32, long_rows)
from torch_cudal1.task import Task, load_source  # noqa: E402


def _alarm(*_):
    raise TimeoutError("trace took over 60 s")


def check(row: dict, rec: dict) -> dict:
    out = {"id": rec["id"]}
    if (rec.get("bytes") or 0) > 1.5e9:   # its inputs would be made for real on this host
        return dict(out, skip="inputs over 1.5 GB")
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        traced = trace_task(Task(source=row["ref_code"], name=rec["id"]), "cpu")
        shapes = max_autotune.tuned_shapes(traced.gm)   # too many: not proposed (auto)
        products = tf32.has_fp32_products(traced.gm)
        with as_on_gpu():   # TF32-only passes: only where the engine proposes TF32 (auto)
            fired = apply_rewrites(traced.gm, only=[n for n in NAMES
                                                    if products or n not in TF32_ONLY]).fired
        out.update(fired=list(fired), tuned_shapes=shapes,
                   tunable=max_autotune.has_tunable_ops(traced.gm) and not max_autotune.over_budget(
                       "auto", shapes, Options().verify_timeout_s),
                   fp32_products=products,
                   convolutions=cudnn_benchmark.has_convolutions(traced.gm),
                   spatial_convolutions=channels_last.has_spatial_convolutions(traced.gm))
        out["recurrent"] = has_recurrent_modules(row["ref_code"], rec["id"])
    except Exception as e:  # noqa: BLE001 - an untraceable task is a finding, not a failure
        out["error"] = f"{type(e).__name__}: {str(e)[:150]}"
    finally:
        signal.alarm(0)
    out.update(tried(rec))
    out["eager_ms"] = rec.get("eager_ms")
    out["record_seconds"] = rec.get("seconds")   # which record this compared (see stale_ids)
    return out


@contextlib.contextmanager
def as_on_gpu():
    """The rewrites that fire on GPU graphs only (Triton templates) fire on this CPU trace too:
    the engine proposes them on the device (rows traced before this lack them)."""
    before = [(m, m.DEVICES) for m in (attention_tf32, long_rows)]
    for m, devices in before:
        m.DEVICES = (*devices, "cpu")
    try:
        yield
    finally:
        for m, devices in before:
            m.DEVICES = devices


def has_recurrent_modules(source: str, name: str) -> bool:
    """Whether the task's model has RNN/LSTM/GRU layers: on the CPU they trace to matrix products
    and pointwise ops, on a GPU to one cuDNN call each, so what the engine proposes there (no
    rewrites, TF32 products or max-autotune templates) cannot be read off this trace."""
    mod = load_source(source, "cudal1_trace_vs_records_" + name)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    return any(isinstance(m, torch.nn.RNNBase) for m in model.modules())


def round_two_ms(a: dict) -> float | None:
    """The time round 2 saw for an attempt: a timing the search took again at its end and kept
    (``retimed``: kept "second") replaced, in the record, the one round 2 had chosen by (L2_71's
    inductor: 0.039 ms then, 0.087 ms after, so round 2 rightly wrapped inductor and the record
    looked as though it had not)."""
    again = a.get("retimed") or {}
    return again.get("median_ms") if again.get("kept") == "second" else a.get("ms")


def new_graph_wraps(rec: dict) -> list[str]:
    """The CUDA-graph wraps the engine's round 2 proposes now from the record's own attempts (its
    rule, run on the times it saw) that the record lacks."""
    hist = [Attempt(Candidate("", a["origin"]), Verdict.ok(),
                    Timing(round_two_ms(a), 0.0, a.get("n") or 1))
            if a.get("reason") == "ok" and round_two_ms(a)
            else Attempt(Candidate("", a["origin"]), Verdict.reject(a.get("reason") or "error", ""))
            for a in rec.get("attempts") or []]   # a failed capture is what round 2 reads too
    engine = BuiltinEngine(Options.resolve({}))
    passed = {a["origin"] for a in rec.get("attempts") or [] if a.get("reason") == "ok"}
    # a wrap that backs up another (a TF32 replay near the tolerance) is not missed where that
    # one passed
    return [c.origin for c in engine.propose(None, hist, SearchContext(device="cuda", round=2))
            if c.meta.get("backs_up") not in passed]


def tried(rec: dict) -> dict:
    """Which candidate families the record's attempts include (not those the search's time
    budget cut off before they had their own limit: never measured)."""
    origins = [str(a.get("origin")) for a in rec.get("attempts") or []
               if not (a.get("reason") == "timeout" and "time budget" in str(a.get("detail")))]
    wraps = new_graph_wraps(rec)
    return {"graph_wraps_now": bool(wraps), "rec_graph_wraps": not wraps,
            "rec_rewrite": any("rewrite" in o for o in origins),
            # which rewrites: a pass added since may fire where others were tried
            "rec_rewrites": sorted({name for o in origins
                                    for names in re.findall(r"rewrite\(([^)]*)\)", o)
                                    for name in names.split(",")}),
            "rec_max_autotune": any("max-autotune" in o for o in origins),
            "rec_tf32": any("tf32" in o for o in origins),
            "rec_cudnn_benchmark": any("cudnn-benchmark" in o for o in origins),
            "rec_channels_last": any("channels-last" in o for o in origins)}


# family: (what the graph has that makes the engine propose it, what the record's attempts show)
FAMILIES = {"rewrite": ("fired", "rec_rewrite"), "max-autotune": ("tunable", "rec_max_autotune"),
            "tf32": ("fp32_products", "rec_tf32"),
            "cudnn-benchmark": ("convolutions", "rec_cudnn_benchmark"),
            "channels-last": ("spatial_convolutions", "rec_channels_last"),
            "cudagraph-wrap": ("graph_wraps_now", "rec_graph_wraps")}
# read off the device's record itself, not the CPU trace: as true for recurrent models
FROM_RECORD = {"cudagraph-wrap"}


def current_rows(graphs: dict[str, dict], records: list[dict]) -> list[dict]:
    """Each ok record's row for ``stale``: its graph's trace where that was traced against this
    very record, with what the record tried. A record searched since its trace was searched by
    the engine as it is: what it lacks from its graph, the engine did not propose on the device
    (an RNN traces to matrix products on the CPU, to one cuDNN call on a GPU), so only what the
    engine proposes now from its own times (FROM_RECORD) can make it stale."""
    rows = []
    for r in records:
        if r.get("status") != "ok":
            continue
        g = graphs.get(r["id"])
        current = g is not None and g.get("record_seconds", r.get("seconds")) == r.get("seconds")
        rows.append(dict(g if current else {"id": r["id"]}, **tried(r)))
    return rows


def stale(found: list[dict]) -> dict[str, list[str]]:
    """Per family, the tasks whose graph gets it now and whose record never tried it."""
    return {fam: [r["id"] for r in found
                  if r.get(has) and has in r and not _tried(r, fam, tried)
                  and (fam in FROM_RECORD or not r.get("recurrent"))]
            for fam, (has, tried) in FAMILIES.items()}


def _tried(row: dict, fam: str, tried: str) -> bool:
    if fam == "rewrite" and "rec_rewrites" in row:   # every rewrite that fires, not just one
        return set(row.get("fired") or []) <= set(row["rec_rewrites"])
    return bool(row.get(tried))


def measure_tasks(results: str, data: str, out: Path, measure, wanted) -> list[dict]:
    """``measure(task row, record)`` for the latest record of each task that is ``wanted``, one
    JSON line each appended to ``out`` (tasks already there are skipped: resumable); all of
    ``out``'s rows."""
    latest = {}
    for line in Path(results).read_text().splitlines():
        r = json.loads(line)
        if wanted(r):
            latest[r["id"]] = r
    rows = {}
    for line in Path(data).read_text().splitlines():
        r = json.loads(line)
        rows[f"L{r['level_id']}_{r['task_id']}"] = r
    done = {json.loads(x)["id"] for x in out.read_text().splitlines()} if out.exists() else set()
    with out.open("a") as f:
        for tid, rec in latest.items():
            if tid in done or tid not in rows:
                continue
            res = measure(rows[tid], rec)
            print(json.dumps(res), flush=True)
            f.write(json.dumps(res) + "\n")
    return [json.loads(x) for x in out.read_text().splitlines()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/kernelbench/h200/results.jsonl"))
    ap.add_argument("--data", default=str(ROOT / ".carry/kernelbench/cudal1_h100_dev.jsonl"))
    ap.add_argument("--out", default="trace_vs_records.jsonl")
    args = ap.parse_args(argv)
    found = measure_tasks(args.results, args.data, Path(args.out), check,
                          wanted=lambda rec: rec.get("status") == "ok")
    latest = {}
    for line in Path(args.results).read_text().splitlines():
        r = json.loads(line)
        latest[r["id"]] = r
    by_family = stale(current_rows({r["id"]: r for r in found}, list(latest.values())))
    for fam, ids in by_family.items():
        print(f"{fam}: proposed now, never tried in the record ({len(ids)}):", ", ".join(ids) or "none")
    eager = {i: r.get("eager_ms") or 0.0 for i, r in latest.items()}
    ids = sorted({i for v in by_family.values() for i in v}, key=lambda i: -eager[i])
    print(f"IDS={','.join(ids)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
