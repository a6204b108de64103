"""KernelBench runner: eager, inductor, cudal1 (built-in engine) and cudal1 (replayed CUDA-L1
solutions) on every task, with roofline floors.

    PYTHONPATH=. python3 benchmarks/kernelbench_runner.py [--level 1] [--slice 0:20] [--fast]
        [--tasks DIR] [--out DIR] [--device cuda] [--task-timeout 240]
        [--jobs 3] [--claim TAG]      # several tasks in flight; one runner per GPU, one queue

Per task, one ``run_search`` with the built-in engine measures the eager and inductor baselines
and the built-in candidates; beside it the CUDA-L1 solution, served by the replay engine (or
taken from ``custom_code`` directly), is verified and timed once, and "cudal1 replay" is the
faster of it and the best baseline — what the backend would pick. Timings never overlap other
work on the device (the device lock), whatever runs in parallel. Results are appended per task to
``results.jsonl`` (a rerun skips done tasks); ``summary.md`` and ``solutions.md`` are rewritten
after every task.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # torch_cudal1, and this folder as the package benchmarks

import torch  # noqa: E402

from torch_cudal1 import search  # noqa: E402
from torch_cudal1.contracts import Attempt, Candidate  # noqa: E402
from torch_cudal1.options import Options  # noqa: E402
from torch_cudal1.task import Task  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "kernelbench" / "cudal1_h100_dev.jsonl"
FASTER = 1.0   # a speedup above this counts as "faster"


# -- tasks ------------------------------------------------------------------------------------
def _folder_tasks(folder: str) -> list[dict]:
    """KernelBench-format files under ``folder`` (KernelBench's own layout, ``levelK/N_Name.py``,
    or flat): ``LK_N`` ids where the layout gives them, so records join the data file's."""
    rows = []
    for p in sorted(Path(folder).rglob("*.py")):
        level = next((int(part[5:]) for part in reversed(p.parts[:-1])
                      if part.startswith("level") and part[5:].isdigit()), 0)
        num = p.stem.split("_", 1)[0]
        tid = f"L{level}_{num}" if level and num.isdigit() else p.stem
        rows.append({"id": tid, "level": level, "ref_code": p.read_text(), "custom_code": None,
                     "source": str(p)})
    return rows


def _task_order(row: dict):
    num = row["id"].rpartition("_")[2]
    return (row["level"], int(num) if num.isdigit() else 0, row["id"])


def load_tasks(args) -> list[dict]:
    """Tasks of ``--data`` (a jsonl with CUDA-L1's solutions) and of ``--tasks`` (a folder); with
    only ``--tasks`` given, those alone. A task in both is the data file's (it has a solution)."""
    rows = []
    if args.data:   # main() fills in the default where --tasks is not given
        for line in Path(args.data).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({"id": f"L{r['level_id']}_{r['task_id']}", "level": int(r["level_id"]),
                             "ref_code": r["ref_code"], "custom_code": r.get("custom_code"),
                             "published_speedup": r.get("score_default")})
    if args.tasks:
        have = {r["id"] for r in rows}
        rows += [r for r in _folder_tasks(args.tasks) if r["id"] not in have]
        rows.sort(key=_task_order)
    if args.level:
        rows = [r for r in rows if r["level"] == args.level]
    if args.slice:
        a, _, b = args.slice.partition(":")
        rows = rows[int(a) if a else None: int(b) if b else None]
    if getattr(args, "ids", None):
        want = args.ids.split(",")
        rows = sorted((r for r in rows if r["id"] in want), key=lambda r: want.index(r["id"]))
    if getattr(args, "stride", 1) > 1:   # a spread-out sample: every K-th task
        rows = rows[:: args.stride]
    if getattr(args, "interleave", False):
        rows = interleave_levels(rows)
    return rows


def attempt_record(a) -> dict:
    """One search attempt as the record keeps it: its time, phases and host figures, and why it
    failed where it did (to be read later without a GPU)."""
    t = a.timing
    return ({"origin": a.candidate.origin, "reason": a.verdict.reason,
             "ms": t.median_ms if t else None, "spread_ms": t.spread_ms if t else None,
             "n": t.n if t else None, "seconds": round(a.seconds, 1), "at_s": a.at_s,
             "phases": a.verdict.stats.get("phases"), "host": _host(t)}
            | ({"retimed": t.extra["retimed"]} if t and "retimed" in t.extra else {})
            | ({k: t.extra[k] for k in ("paired_ref_ms", "paired_ref_switches") if k in t.extra}
               if t and t.extra.get("paired_ref_ms") else {})
            | ({"detail": a.verdict.detail[:300]}
               if not a.verdict.accepted and a.verdict.detail else {}))


def _host(timing) -> dict | None:
    """How quiet the host was during a timing: reserved CPUs, involuntary context switches."""
    if timing is None:
        return None
    keep = ("timing_cpus", "involuntary_switches", "threads_moved_back", "load1", "cpu_note",
            "clock")
    return {k: timing.extra[k] for k in keep if k in timing.extra} or None


def interleave_levels(rows: list[dict]) -> list[dict]:
    """Round-robin over levels (1, 2, 3, 1, ...), each level in its own order: a run cut short
    still covers every level."""
    by_level: dict[int, list[dict]] = {}
    for r in rows:
        by_level.setdefault(r["level"], []).append(r)
    queues = [by_level[k] for k in sorted(by_level)]
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


# -- ceilings and work counts ------------------------------------------------------------------
def _time_device(fn, device, reps=10) -> float:
    """Median seconds of ``fn()``."""
    fn()
    times = []
    for _ in range(reps):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_ceilings(device: str) -> dict:
    """Bandwidth of a large device copy (bytes read + written per second) and the throughput of a
    large bf16 matmul (FLOP/s): the two roofs of the roofline."""
    gpu = device.startswith("cuda")
    n = (1 << 28) if gpu else (1 << 24)            # 1 GiB / 64 MiB of fp32
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    t = _time_device(lambda: dst.copy_(src), device)
    bw = 2 * src.numel() * src.element_size() / t
    del src, dst
    m = 8192 if gpu else 1024
    a = torch.randn(m, m, device=device, dtype=torch.bfloat16)
    b = torch.randn(m, m, device=device, dtype=torch.bfloat16)
    t = _time_device(lambda: a @ b, device, reps=10 if gpu else 3)
    return {"device": device, "bandwidth_Bps": bw, "peak_flops": 2 * m ** 3 / t,
            "name": torch.cuda.get_device_name(device) if gpu else "cpu"}


def native_clock_note() -> str:
    """On a GPU, builds the native timing helpers unless built (once per torch version; a minute
    or two), so that every record's timings are on one clock. (On a CPU the Python loop only
    adds a ``perf_counter`` call to each sample.)"""
    from torch_cudal1.bench import native
    if native.load(optional=True) is not None:
        return "timing clock: native"
    try:
        native.build()
        return "timing clock: native (built now)"
    except Exception as e:  # noqa: BLE001 - the Python loop still times, less sharply
        return f"timing clock: the Python loop (native helpers failed to build: {type(e).__name__}: {e})"


def measure_host_launch_us(device: str, calls: int = 2000) -> float:
    """Host microseconds per call of a tiny in-place op on ``device``, from the timing CPUs
    (best of five runs): how fast this host issues work. Launch-bound timings, eager's above
    all, scale with it, so records from different machines are compared through it
    (``compare_runs.py --reruns``)."""
    from torch_cudal1.bench.timing_cpus import timing_cpus
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    x = torch.zeros(16, device=device)
    best = float("inf")
    with torch.no_grad(), timing_cpus({}):
        for _ in range(200):
            x.add_(1)
        sync()
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                x.add_(1)
            sync()
            best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def count_work(source: str) -> dict:
    """FLOPs (FlopCounterMode) and bytes (inputs, parameters, outputs) of one reference call, on
    the meta device: no memory, no kernels."""
    from torch.utils.flop_counter import FlopCounterMode

    from torch_cudal1.task import load_source
    mod = load_source(source, f"kb_work_{abs(hash(source))}")
    with torch.device("meta"):
        model = mod.Model(*mod.get_init_inputs()).eval()
        inputs = mod.get_inputs()
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))  # noqa: E731
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        out = model(*inputs)
    leaves = torch.utils._pytree.tree_leaves(out)
    state = list(model.parameters()) + list(model.buffers())
    return {"flops": int(fc.get_total_flops()),
            "bytes": int(nbytes(inputs) + nbytes(state) + nbytes(leaves))}


# -- one task -----------------------------------------------------------------------------------
def replay_candidate(row: dict, task: Task, data_path: str | None, device: str):
    """The CUDA-L1 solution: from the replay engine when it serves one, else ``custom_code``."""
    if not row.get("custom_code"):
        return None
    try:
        from torch_cudal1.engines.base import SearchContext
        from torch_cudal1.engines.replay import ReplayEngine
        eng = ReplayEngine(Options.resolve({"engine": "replay", "replay_file": data_path}))
        cands = eng.propose(task, [], SearchContext(device=device, round=1, samples=1))
        if cands and not cands[0].meta.get("failed"):
            return cands[0]
    except Exception as e:  # noqa: BLE001 - the engine is optional here
        print(f"  replay engine unavailable ({type(e).__name__}: {e}); using custom_code", flush=True)
    return Candidate(row["custom_code"], "replay:custom_code", round=1)


def run_task(row: dict, args, ceilings: dict, budget_s: float | None = None) -> dict:
    """One task's search, eager/inductor and the replayed solution; the search stops proposing
    after ``budget_s`` (default ``--task-timeout``) and keeps what it verified so far."""
    from torch_cudal1.search import SearchError, run_search
    from torch_cudal1.verify import evaluate
    task = Task(source=row["ref_code"], name=row["id"])
    rec = {"id": row["id"], "level": row["level"], "published_speedup": row.get("published_speedup"),
           "precision": torch.get_float32_matmul_precision()}
    t0 = time.monotonic()
    try:
        rec.update(count_work(row["ref_code"]))
    except Exception as e:  # noqa: BLE001 - some references do not run on meta tensors
        rec["work_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    baselines = "eager,inductor" + (",inductor-max-autotune" if args.max_autotune else "")
    budget_s = args.task_timeout if budget_s is None else budget_s
    child_s = min(budget_s, 300.0)   # one child's limit: none outlives the task's budget
    opts = Options.resolve({
        "engine": "builtin", "baselines": baselines, "rounds": args.rounds,
        "trials": 2 if args.fast else 3, "time_budget_s": budget_s,
        "verify_timeout_s": child_s, "progress": False,
        "parallel_builds": args.builds_per_task, "cache_dir": str(Path(args.out) / "cache")})
    # The CUDA-L1 solution is verified and timed beside the search (its nvcc build overlaps the
    # search's children; the device lock keeps the timings apart).
    cand = None if args.no_replay else replay_candidate(row, task, args.data, args.device)
    replay = None
    if cand is not None:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(1, thread_name_prefix="kb-replay")
        replay = pool.submit(evaluate, task, cand, device=args.device, trials=opts.trials,
                             timeout_s=child_s,
                             pair_reference=opts.pairs_reference(args.device))
        pool.shutdown(wait=False)
    lines = []
    try:
        res = run_search(task, opts, args.device, key=row["id"], progress=lines.append)
    except SearchError as e:
        if replay is not None:
            replay.result()
        rec.update(status="reference_failed", error=str(e)[:500], seconds=time.monotonic() - t0)
        return rec
    try:
        w = res.winner
        rec.update(status="ok", eager_ms=res.eager_ms, inductor_ms=res.inductor_ms,
                   builtin_ms=w.timing.median_ms, builtin_winner=w.candidate.origin,
                   builtin_correct=bool(w.verdict.accepted), stop_reason=res.stop_reason,
                   search_budget_s=round(budget_s, 1),
                   attempts=[attempt_record(a) for a in res.attempts])
        if w.timing.paired_speedup:   # eager timed in the winner's own child, right after it
            rec["builtin_paired_speedup"] = w.timing.paired_speedup
        rec["replay_ms"] = w.timing.median_ms   # without the solution: the built-in winner
        rec["replay_winner"] = w.candidate.origin
        if replay is not None:
            def alone(c, record=False):   # the solution verified again, the search done
                return Attempt(c, *evaluate(task, c, device=args.device, trials=opts.trials,
                                            timeout_s=child_s,
                                            pair_reference=opts.pairs_reference(args.device)))
            solution = Attempt(cand, *replay.result())
            if solution.verdict.reason in ("memory", "timeout"):
                # out of device memory or time beside the search's children (its timings wait
                # for theirs): a property of the crowd, not of the solution; once more, alone
                solution = alone(cand)
            if solution.verdict.accepted and solution.timing is not None and args.device != "cpu":
                # a timing the host disturbed or that spread wide, taken once more, by the
                # search's rule for its own best (L3_31's solution once took 7.23 ms +-5.83 with
                # 211 preemptions of the timing thread beside two other tasks, 1.52 ms alone)
                search.retime_unsound([solution], alone, lines.append)
            verdict, timing = solution.verdict, solution.timing
            base = min((a for a in res.attempts if a.candidate.origin.startswith("baseline:")
                        and a.verdict.accepted and a.timing), key=lambda a: a.timing.median_ms)
            rec.update(replay_fields(rec, cand, verdict, timing, base))
    finally:
        res.cleanup()
    if "flops" in rec and ceilings:
        floor_s = max(rec["bytes"] / ceilings["bandwidth_Bps"], rec["flops"] / ceilings["peak_flops"])
        rec["floor_ms"] = floor_s * 1e3
        rec["roofline_fraction"] = rec["floor_ms"] / rec["builtin_ms"] if rec.get("builtin_ms") else None
    rec["seconds"] = round(time.monotonic() - t0, 1)
    return rec


def replay_fields(rec: dict, cand: Candidate, verdict, timing, base: Attempt | None) -> dict:
    """The record's replay fields for the CUDA-L1 solution's verdict and timing: cudal1 with the
    replay engine also has the built-in candidates, so its time is the built-in winner's unless
    the solution was accepted and beats it and, by the search's own rule, as if it had been one
    more candidate, the best baseline ``base`` beyond the noise (None: no baseline to beat was
    measured, so the solution cannot count)."""
    from torch_cudal1.verify import RULES
    out = {"replay_ms": rec["builtin_ms"], "replay_winner": rec["builtin_winner"],
           "replay_candidate": {"origin": cand.origin, "accepted": verdict.accepted,
                                "reason": verdict.reason, "detail": verdict.detail[:300],
                                "ms": timing.median_ms if timing else None,
                                "spread_ms": timing.spread_ms if timing else None,
                                "n": timing.n if timing else None,
                                "phases": verdict.stats.get("phases"),
                                "host": _host(timing),
                                "paired_speedup": timing.paired_speedup if timing else None,
                                "rules": RULES}}
    if timing is not None and "retimed" in timing.extra:   # the other of two timings
        out["replay_candidate"]["retimed"] = timing.extra["retimed"]
    if verdict.accepted and timing and base and timing.median_ms < rec["builtin_ms"] \
            and search.beats(Attempt(cand, verdict, timing), base):
        out["replay_ms"], out["replay_winner"] = timing.median_ms, cand.origin
    return out


def replay_under_older_rules(rec: dict) -> bool:
    """The replay figure rests on the CUDA-L1 solution, accepted under older verifier rules."""
    from torch_cudal1.verify import RULES
    return rec.get("status") == "ok" and str(rec.get("replay_winner", "")).startswith("replay:") \
        and (rec.get("replay_candidate") or {}).get("rules", 0) < RULES


def _out_of_memory(rec: dict) -> bool:
    """The device ran out of memory for this task's reference, or rejected one of its candidates
    for it (``memory``): beside other jobs' tensors, that says nothing about the task."""
    if rec.get("status") in ("reference_failed", "harness_error") and \
            "OutOfMemoryError" in str(rec.get("error", "")):
        return True
    attempts = rec.get("attempts") if isinstance(rec.get("attempts"), list) else []
    return any(isinstance(a, dict) and a.get("reason") == "memory"
               and "out of memory" in str(a.get("detail", "out of memory")).lower()
               for a in [rec.get("replay_candidate"), *attempts])


def _run_task_safely(row: dict, args, ceilings: dict, budget_s: float | None = None) -> dict:
    t0 = time.monotonic()
    try:
        return run_task(row, args, ceilings, budget_s)
    except Exception as e:  # noqa: BLE001 - the harness failed on this task: record it, go on
        return {"id": row["id"], "level": row["level"], "status": "harness_error",
                "error": f"{type(e).__name__}: {str(e)[:400]}", "seconds": round(time.monotonic() - t0, 1)}


# -- summary ------------------------------------------------------------------------------------
def _geo(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(records: list[dict]) -> dict:
    out = {}
    levels = sorted({r["level"] for r in records})
    for key in [f"level {lv}" for lv in levels] + ["overall"]:
        rs = [r for r in records if key == "overall" or f"level {r['level']}" == key]
        ok = [r for r in rs if r.get("status") == "ok" and r.get("eager_ms") and r.get("inductor_ms")]
        row = {"tasks": len(rs), "measured": len(ok),
               "incorrect": sum(1 for r in rs if r.get("status") == "ok" and not r.get("builtin_correct")),
               "reference_failed": sum(1 for r in rs if r.get("status") == "reference_failed"),
               "replay_rejected": sum(1 for r in rs if r.get("replay_candidate")
                                      and not r["replay_candidate"]["accepted"])}
        for name, col in (("inductor", "inductor_ms"), ("cudal1_builtin", "builtin_ms"),
                          ("cudal1_replay", "replay_ms")):
            se = [r["eager_ms"] / r[col] for r in ok if r.get(col)]
            si = [r["inductor_ms"] / r[col] for r in ok if r.get(col)]
            row[name] = {"geomean_vs_eager": _geo(se), "geomean_vs_inductor": _geo(si),
                         "median_vs_eager": statistics.median(se) if se else float("nan"),
                         "faster_than_eager": sum(x > FASTER for x in se) / len(se) if se else float("nan"),
                         "faster_than_inductor": sum(x > FASTER for x in si) / len(si) if si else float("nan")}
        fr = [r["roofline_fraction"] for r in ok if r.get("roofline_fraction")]
        row["roofline_fraction_median"] = statistics.median(fr) if fr else float("nan")
        out[key] = row
    return out


def write_markdown(records: list[dict], summary: dict, ceilings: dict, path: Path) -> None:
    L = [f"# KernelBench: eager vs inductor vs cudal1 ({ceilings.get('name', '?')})", ""]
    if ceilings:
        L.append(f"Ceilings: copy bandwidth {ceilings['bandwidth_Bps'] / 1e9:.0f} GB/s, bf16 matmul "
                 f"{ceilings['peak_flops'] / 1e12:.3g} TFLOP/s.")
        L.append("")
    L += ["| set | tasks | measured | incorrect | impl | geomean vs eager | geomean vs inductor | "
          "median vs eager | faster than eager | faster than inductor |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for key, row in summary.items():
        if "tasks" not in row:
            continue
        for impl in ("inductor", "cudal1_builtin", "cudal1_replay"):
            s = row[impl]
            L.append(f"| {key} | {row['tasks']} | {row['measured']} | {row['incorrect']} | {impl} | "
                     f"{s['geomean_vs_eager']:.3f} | {s['geomean_vs_inductor']:.3f} | "
                     f"{s['median_vs_eager']:.3f} | {s['faster_than_eager']:.0%} | "
                     f"{s['faster_than_inductor']:.0%} |")
    at = summary.get("overall", {}).get("all_tasks")
    if at:
        L += ["", f"Over all {at['total_tasks']} KernelBench tasks ({at['measured']} measured here, "
              "the rest counted 1.0): geomean over eager — inductor "
              f"{at['inductor']:.3f}, cudal1 built-in {at['cudal1_builtin']:.3f}, "
              f"cudal1 built-in + replay {at['cudal1_replay']:.3f}."]
        if at.get("tf32_winners"):
            L += ["", f"Built-in winners with float32 products on TF32 tensor cores (within the "
                  f"float32 tolerance): {at['tf32_winners']}. Without them (each such task at the "
                  "fastest accepted attempt of its search without TF32) the built-in figure over "
                  f"all tasks is {at['cudal1_builtin_full_fp32']:.3f}."]
        if at.get("cudnn_benchmark_winners"):
            L += ["", "Built-in winners with cuDNN's autotuning of convolution algorithms for "
                  f"their own calls: {at['cudnn_benchmark_winners']}. Without them (likewise) the "
                  f"built-in figure over all tasks is {at['cudal1_builtin_without_cudnn_benchmark']:.3f}."]
        if at.get("channels_last_winners"):
            L += ["", "Built-in winners with the channels-last layout: "
                  f"{at['channels_last_winners']}. Without them (likewise) the built-in figure "
                  f"over all tasks is {at['cudal1_builtin_without_channels_last']:.3f}."]
        if at.get("python_clock"):
            L += ["", f"Timed on the Python loop, not the native clock: {at['python_clock']} of the "
                  f"{at['measured']} tasks (the loop's own host time sits inside their launch-bound "
                  "samples; build the helpers with `cudal1 bench --native` first)."]
        if at.get("disturbed_eager"):
            ids = at["disturbed_eager"]
            L += ["", f"Eager timed while the host preempted it on the timing core "
                  f"{search.DISTURBED_SWITCHES} times or more: {len(ids)} tasks ({' '.join(ids)}; "
                  "recorded before such timings were taken again; run them again). Counted 1.0 "
                  "instead, the built-in figure over all tasks is "
                  f"{at['cudal1_builtin_without_disturbed_eager']:.3f}."]
        if at.get("paired_tasks"):
            L += ["", f"With eager timed in the built-in winner's own verifier child, right after "
                  f"it (`pair_reference`): {at['paired_tasks']} tasks, geomean over eager "
                  f"{at['paired_geomean']:.3f}; the same tasks with eager from its own child: "
                  f"{at['unpaired_geomean_same_tasks']:.3f}."]
            if at.get("eager_drift_median"):
                L[-1] += (f" Eager's timings across one search's children varied by a median "
                          f"factor of {at['eager_drift_median']:.2f} (slowest over fastest), up to "
                          f"{at['eager_drift_max']:.2f} ({at['eager_drift_max_task']}).")
        if at.get("stale"):
            L += ["", f"Searched without a candidate family the built-in engine proposes from their "
                  f"graph now: {at['stale']} of the {at['measured']} tasks (mostly searched before "
                  "it existed; `benchmarks/trace_vs_records.py` lists them). Their figures are an "
                  "older engine's until they run again."]
    L += ["", "Replayed CUDA-L1 solutions rejected by the verifier: "
          + ", ".join(f"{k}: {v['replay_rejected']}" for k, v in summary.items())]
    older = [r["id"] for r in records if replay_under_older_rules(r)]
    if older:
        L += ["", f"Replay winners accepted under older verifier rules: {len(older)} "
              f"({' '.join(older)}). A rule added since may reject them, so the replay figure is "
              "an upper bound until `benchmarks/replay_recheck.py` verifies them again."]
    shaken = [r["id"] for r in records if r.get("status") == "ok" and replay_disturbed(r)]
    if shaken:
        L += ["", f"CUDA-L1 solutions timed once while the host disturbed the timing, or with a "
              f"wide spread, that could have won within it: {len(shaken)} ({' '.join(shaken)}). "
              "The replay figure counts them at that time until `benchmarks/replay_recheck.py` "
              "times them again."]
    L += ["",
          "| task | eager ms | inductor ms | cudal1 builtin ms | winner | cudal1 replay ms | replay verdict "
          "| floor ms | of roofline |", "|---|---|---|---|---|---|---|---|---|"]
    f = lambda x, p=4: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    for r in records:
        rc = r.get("replay_candidate") or {}
        L.append(f"| {r['id']} | {f(r.get('eager_ms'))} | {f(r.get('inductor_ms'))} | "
                 f"{f(r.get('builtin_ms'))} | {r.get('builtin_winner', r.get('status'))} | "
                 f"{f(r.get('replay_ms'))} | {rc.get('reason', '-')} | {f(r.get('floor_ms'))} | "
                 f"{f(r.get('roofline_fraction'), 3)} |")
    wide = wide_spreads(records)
    if wide:
        L += ["", f"Timings whose inter-quartile spread is over {WIDE_SPREAD:.0%} of their median "
              "(a ratio built on them is unsound; run the task again):", "",
              "| task | timing | median ms | spread ms |", "|---|---|---|---|"]
        L += [f"| {t} | {origin} | {ms:.4f} | {spread:.4f} |" for t, origin, ms, spread in wide]
    path.write_text("\n".join(L) + "\n")


WIDE_SPREAD = 0.25   # of the median: beyond it a sample of ~10 calls does not pin the median


def wide_spreads(records: list[dict]) -> list[tuple]:
    """(task, origin, median, spread) of the timings the summary's ratios rest on (eager,
    inductor, the built-in winner) whose spread is wide."""
    out = []
    for r in records:
        used = {"baseline:eager", "baseline:inductor", r.get("builtin_winner")}
        for a in r.get("attempts") or []:
            ms, spread = a.get("ms"), a.get("spread_ms")
            if a.get("origin") in used and ms and spread is not None and spread > WIDE_SPREAD * ms:
                out.append((r["id"], a["origin"], ms, spread))
    return out


def all_tasks_geomean(records: list[dict], total: int) -> dict:
    """Geomean speedup over eager across the whole benchmark (``total`` tasks), counting every
    task without a correct measurement as 1.0 — the way CUDA-L1 reports its figure."""
    out = {"total_tasks": total}
    ok = [r for r in records if r.get("status") == "ok" and r.get("eager_ms")]
    for name, col in (("inductor", "inductor_ms"), ("cudal1_builtin", "builtin_ms"),
                      ("cudal1_replay", "replay_ms")):
        logs = [math.log(r["eager_ms"] / r[col]) for r in ok if r.get(col)]
        out[name] = math.exp(sum(logs) / total) if total >= len(logs) else float("nan")
    # what one mechanism adds, measured within the same searches: each task it won at the
    # fastest accepted attempt of its own search without it
    for tag, figure, count in SWITCHED:
        logs = [math.log(r["eager_ms"] / ms) for r in ok if (ms := builtin_ms_without(r, tag))]
        out[figure] = math.exp(sum(logs) / total) if total >= len(logs) else float("nan")
        out[count] = sum(1 for r in ok if tag in str(r.get("builtin_winner")))
    out["measured"] = len(ok)
    out["python_clock"] = sum(1 for r in ok if timed_on_python_clock(r))
    disturbed = [r for r in ok if eager_disturbed(r)]
    if disturbed:   # their speedups rest on an eager time the host inflated: counted 1.0 instead
        out["disturbed_eager"] = sorted(r["id"] for r in disturbed)
        logs = [math.log(r["eager_ms"] / r["builtin_ms"]) for r in ok
                if r.get("builtin_ms") and r not in disturbed]
        out["cudal1_builtin_without_disturbed_eager"] = math.exp(sum(logs) / total)
    paired = [r for r in ok if r.get("builtin_paired_speedup") and r.get("builtin_ms")]
    if paired:   # the same tasks both ways: what the host's drift between children did
        out["paired_tasks"] = len(paired)
        out["paired_geomean"] = _geo([r["builtin_paired_speedup"] for r in paired])
        out["unpaired_geomean_same_tasks"] = _geo([r["eager_ms"] / r["builtin_ms"] for r in paired])
        drift = sorted((d, r["id"]) for r in paired if (d := eager_drift(r)))
        if drift:
            out["eager_drift_median"] = statistics.median(d for d, _ in drift)
            out["eager_drift_max"], out["eager_drift_max_task"] = drift[-1]
    return out


def eager_drift(r: dict) -> float | None:
    """Slowest over fastest of eager's timings in one search: its own child's and the paired one
    in every attempt's child. The same code on the same inputs: the host's drift between
    children, which a ratio of two children's timings carries."""
    from benchmarks.eager_switches import record_eager_timings
    ms = [x for x, _ in record_eager_timings(r)]
    return max(ms) / min(ms) if len(ms) > 1 else None


def eager_disturbed(r: dict) -> bool:
    """The record's eager time was taken while the host preempted its thread on the timing core
    ``search.DISTURBED_SWITCHES`` times or more (records from before such timings were taken
    again): eager ran up to 2.06x its other timings then (``benchmarks/eager_switches.py``)."""
    return any(a.get("origin") == "baseline:eager" and a.get("ms") and
               (a.get("host") or {}).get("involuntary_switches", 0) >= search.DISTURBED_SWITCHES
               for a in r.get("attempts") or [])


def replay_disturbed(r: dict) -> bool:
    """The replayed solution was accepted, timed once while the host preempted its timing thread
    ``search.DISTURBED_SWITCHES`` times or more or with a wide spread, and not timed again (records
    from before the runner retimed such solutions: L3_31's, 7.23 ms +-5.83 against 1.52). Only where,
    within its spread, it could have beaten the built-in winner: elsewhere a second
    timing would change no figure."""
    c = r.get("replay_candidate") or {}
    if not (c.get("accepted") and c.get("ms")) or "retimed" in c:
        return False
    spread = c.get("spread_ms") or 0.0
    unsound = (c.get("host") or {}).get("involuntary_switches", 0) >= search.DISTURBED_SWITCHES \
        or spread > search.WIDE_SPREAD * c["ms"]
    return unsound and c["ms"] - spread < (r.get("builtin_ms") or 0.0)


def timed_on_python_clock(r: dict) -> bool:
    """Some timing of the task ran on the Python loop (the native helpers were not built): its
    own host time then sits inside every launch-bound sample, so the task's ratios are not
    comparable with those of tasks timed on the native clock."""
    return any((a.get("host") or {}).get("clock") == "python" for a in r.get("attempts") or [])


# (origin tag, summary key of the figure without it, summary key of its winners' count)
SWITCHED = (("tf32", "cudal1_builtin_full_fp32", "tf32_winners"),
            ("cudnn-benchmark", "cudal1_builtin_without_cudnn_benchmark", "cudnn_benchmark_winners"),
            ("channels-last", "cudal1_builtin_without_channels_last", "channels_last_winners"))


def builtin_ms_without(r: dict, tag: str) -> float | None:
    """The built-in time without candidates whose origin has ``tag``: the winner's, or where one
    of them won, the fastest accepted attempt of the same search without them."""
    if tag not in str(r.get("builtin_winner")):
        return r.get("builtin_ms")
    ms = [a["ms"] for a in r.get("attempts") or []
          if a.get("reason") == "ok" and a.get("ms") and tag not in str(a.get("origin"))]
    return min(ms) if ms else None


def full_float32_ms(r: dict) -> float | None:
    """The built-in time without TF32 products."""
    return builtin_ms_without(r, "tf32")


def write_solutions(records: list[dict], path: Path) -> None:
    """The CUDA-L1 solutions through our verifier and harness: verdict, reason, our speedups
    over eager and inductor on this GPU, and the speedup CUDA-L1 published for an H100."""
    f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    with_code = [r for r in records if r.get("replay_candidate")]
    L = ["# CUDA-L1 solutions through the torch_cudal1 verifier and timing harness", "",
         f"{len(with_code)} solutions (tasks measured by `kernelbench_runner.py`). `ours` = "
         "eager (or inductor) time / the solution's time, same harness, this GPU; `published` = "
         "CUDA-L1's H100 figure over eager.", "",
         "| task | verdict | reason | ours vs eager | ours vs inductor | published | detail |",
         "|---|---|---|---|---|---|---|"]
    false_by_reason: dict = {}
    slower = []
    for r in with_code:
        c = r["replay_candidate"]
        ms = c.get("ms")
        se = r["eager_ms"] / ms if ms and r.get("eager_ms") else None
        si = r["inductor_ms"] / ms if ms and r.get("inductor_ms") else None
        pub = r.get("published_speedup")
        detail = (c.get("detail") or "").splitlines()[0][:110].replace("|", "/") if c.get("detail") else ""
        L.append(f"| {r['id']} | {'accepted' if c['accepted'] else 'rejected'} | {c['reason']} | "
                 f"{f(se)} | {f(si)} | {f(pub)} | {detail} |")
        if not c["accepted"] and (pub or 0) > 1.0:
            false_by_reason.setdefault(c["reason"], []).append(r["id"])
        if c["accepted"] and (pub or 0) > 1.0 and se is not None and se < 1.0:
            slower.append(r["id"])
    n_pub = sum(1 for r in with_code if (r.get("published_speedup") or 0) > 1.0)
    L += ["", "## Published speedups that do not hold", "",
          f"{sum(map(len, false_by_reason.values()))} of {n_pub} solutions with a published "
          "speedup above 1 were rejected by the verifier:", ""]
    for reason, ids in sorted(false_by_reason.items(), key=lambda kv: -len(kv[1])):
        L.append(f"- `{reason}` ({len(ids)}): {', '.join(ids)}")
    L += ["", f"Accepted but slower than eager on this GPU ({len(slower)}): "
          + (", ".join(slower) or "none"), ""]
    path.write_text("\n".join(L) + "\n")


def _shard(rows: list[dict], spec: str | None) -> list[dict]:
    """``I/N``: every N-th task starting at I (one runner per GPU, same results file)."""
    if not spec:
        return rows
    i, _, n = spec.partition("/")
    return rows[int(i)::int(n)]


def read_results(path: Path) -> dict:
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["id"]] = r
    return done


# Tasks in flight when the caller cut the run off (SIGTERM from its timeout): no record is
# written for them, but how long each had run is kept here, beside results.jsonl.
CUT_OFF = "cut_off.jsonl"


def record_cut_off(out: Path, running_since: dict[str, float], results: Path) -> None:
    """How long each task in flight at the cut-off had run, and how many records results.jsonl
    had then: a record written later supersedes the hint."""
    now = time.monotonic()
    n = len(results.read_text().splitlines()) if results.exists() else 0
    with (out / CUT_OFF).open("a") as fh:
        for tid, t0 in running_since.items():
            fh.write(json.dumps({"id": tid, "cut_off_after_s": round(now - t0, 1),
                                 "records_then": n}) + "\n")


def last_times(results: Path) -> dict:
    """Each task's last record, for the deadline rule; where a run was cut off with the task in
    flight after that record, its ``seconds`` is at least how long it had run then (L1_68, last
    recorded at 210 s, was once cut off twice after 446 s)."""
    last, line_of = {}, {}
    if results.exists():
        for i, line in enumerate(results.read_text().splitlines(), 1):
            if line.strip():
                r = json.loads(line)
                last[r["id"]], line_of[r["id"]] = r, i
    cut = results.parent / CUT_OFF
    for line in (cut.read_text().splitlines() if cut.exists() else []):
        c = json.loads(line)
        if c["records_then"] >= line_of.get(c["id"], 0):
            rec = last.get(c["id"]) or {}
            last[c["id"]] = dict(rec, seconds=max(float(rec.get("seconds") or 0.0),
                                                  c["cut_off_after_s"]))
    return last


# A task is expected to take its last record's time this many times over: the built-in engine
# proposes more than when most records were made, and other jobs share the host. (Measured on
# the H200 with four jobs to one device: 15 stale tasks took 0.86-2.78 times their last record,
# 5 of them over 1.9; L2_34 and L2_3, last 346 and 237 s, were both cut off after 450 s. The
# search's budget catches the rest.)
EXPECTED_SLOWDOWN = 2.0


# Seconds a task keeps after its search's budget, before the deadline: the candidate in flight,
# the settling retimes of the baselines and the best candidates, the replayed solution's
# verdict, each waiting for the device behind other jobs. (With 90, two of five tasks were
# still running 90 s after their budgets and were cut off.) A task whose last
# record was short keeps less, in proportion: its candidates and retimes are short too.
DEADLINE_RESERVE_S = 150.0
RESERVE_PER_RECORD_S = 0.75    # of its last record's seconds, at least MIN_RESERVE_S
MIN_RESERVE_S = 45.0
# A search given less than this is not started: it would time its baselines and little more.
MIN_SEARCH_S = 60.0


def _reserve(record: dict | None) -> float:
    took = (record or {}).get("seconds")
    if not took:
        return DEADLINE_RESERVE_S
    return min(DEADLINE_RESERVE_S, max(MIN_RESERVE_S, RESERVE_PER_RECORD_S * float(took)))


def search_budget(task_timeout: float, elapsed: float, deadline: float,
                  record: dict | None = None) -> float:
    """The search's budget for a task started now: ``--task-timeout``, cut so that the task
    ends before ``deadline`` (0 = none) instead of being killed there with nothing recorded."""
    if not deadline:
        return task_timeout
    return min(task_timeout, deadline - elapsed - _reserve(record))


def fits(record: dict | None, elapsed: float, deadline: float,
         slowdown: float = EXPECTED_SLOWDOWN) -> bool:
    """A task may start now if its last record, times ``slowdown``, says it ends before
    ``deadline`` (0 = none)."""
    if not deadline:
        return True
    if search_budget(float("inf"), elapsed, deadline, record) < MIN_SEARCH_S:
        return False
    return not (record and record.get("seconds")) or \
        elapsed + slowdown * float(record["seconds"]) <= deadline


def done_ids(path: Path, retry_failed: bool) -> set:
    """Ids with a record; with ``retry_failed`` only those whose latest record is a measurement
    with no candidate lost to device memory (a failure of the harness, since fixed, is run
    again; its new record supersedes the old)."""
    return {k for k, r in read_results(path).items()
            if not retry_failed or (r.get("status") == "ok" and not _out_of_memory(r))}


def _with_builtin_in_replay(r: dict) -> dict:
    """Records of runners before the fix counted replay against the baselines only."""
    if r.get("builtin_ms") and r.get("replay_ms") and r["builtin_ms"] < r["replay_ms"]:
        r = dict(r, replay_ms=r["builtin_ms"], replay_winner=r.get("builtin_winner"))
    return r


# What the built-in engine proposes from each task's graph (benchmarks/trace_vs_records.py, on CPU)
GRAPH_TRACES = ROOT / "benchmarks" / "results" / "trace_vs_records" / "cpu" / "trace_vs_records_cpu.jsonl"


def stale_ids(records: list[dict], traces: Path = GRAPH_TRACES) -> list[str] | None:
    """The records that lack a candidate family the engine proposes from their graph now
    (searched before it existed), the slowest (eager) first: the graph's side from the traces,
    the attempts from each record as it is. A task run again drops out for its graph's families,
    whether its new record has them or not, but not for the CUDA-graph wraps its own times call
    for now. None without traces."""
    if not traces.exists():
        return None
    from benchmarks import trace_vs_records
    graphs = {}
    for line in traces.read_text().splitlines():
        g = json.loads(line)
        graphs[g["id"]] = g
    ok = {r["id"]: r for r in records if r.get("status") == "ok"}
    rows = trace_vs_records.current_rows(graphs, list(ok.values()))
    ids = {i for found in trace_vs_records.stale(rows).values() for i in found}
    return sorted(ids, key=lambda i: -(ok[i].get("eager_ms") or 0.0))


def stale_records(records: list[dict], traces: Path = GRAPH_TRACES) -> int | None:
    """How many records ``stale_ids`` finds (None without traces)."""
    ids = stale_ids(records, traces)
    return None if ids is None else len(ids)


def write_summary(rows: list[dict], results: Path, ceilings: dict, out: Path, total: int) -> dict:
    done = read_results(results)
    selected = [_with_builtin_in_replay(done[r["id"]]) for r in rows if r["id"] in done]
    summary = summarize(selected)
    if total:
        summary["overall"]["all_tasks"] = all_tasks_geomean(selected, total)
        summary["overall"]["all_tasks"]["stale"] = stale_records(selected)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    write_markdown(selected, summary, ceilings, out / "summary.md")
    write_solutions(selected, out / "solutions.md")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="KernelBench jsonl (ref_code, custom_code); default: "
                                   "../shared/kernelbench/cudal1_h100_dev.jsonl unless --tasks is given")
    ap.add_argument("--tasks", help="a folder of KernelBench-format *.py tasks (KernelBench's "
                                    "levelK/N_Name.py layout or flat): with --data, in addition")
    ap.add_argument("--level", type=int)
    ap.add_argument("--slice", help="A:B over the selected tasks")
    ap.add_argument("--out", default=os.environ.get("OUT"),
                    help="default: benchmarks/results/kernelbench/<device>")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--task-timeout", type=float, default=240.0, help="seconds per task (search)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fast", action="store_true", help="fewer input draws (2) per verification")
    ap.add_argument("--max-autotune", action="store_true", help="also the inductor max-autotune baseline")
    ap.add_argument("--no-replay", action="store_true", help="skip the CUDA-L1 solutions")
    ap.add_argument("--ids", help="comma-separated task ids (L1_12,...), run in that order")
    ap.add_argument("--stride", type=int, default=1, help="every K-th selected task")
    ap.add_argument("--interleave", action="store_true",
                    help="alternate levels (1, 2, 3, 1, ...) so a partial run covers each")
    ap.add_argument("--shard", help="I/N: this process runs every N-th task from I (one per GPU)")
    ap.add_argument("--claim", metavar="TAG",
                    help="take tasks from a queue shared by every runner given the same TAG (one "
                         "per GPU, each free to go faster than the others); use a new TAG per run")
    ap.add_argument("--jobs", type=int, default=1,
                    help="tasks in flight at once; their builds and checks overlap, their timings "
                         "never do (the device lock)")
    ap.add_argument("--builds-per-task", type=int, default=2,
                    help="parallel build+verify children within one task's search round")
    ap.add_argument("--total-tasks", type=int, default=250,
                    help="the benchmark's size for the all-tasks geomean (tasks without a "
                         "measurement count 1.0); 0 = off")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="start no new task after this long (resume with another run)")
    ap.add_argument("--deadline-seconds", type=float, default=0,
                    help="this run is cut off after this long (the caller's timeout): start no "
                         "task whose last record's time, times --expected-slowdown, would not fit "
                         "before it, and go "
                         "on with those that would; each search stops proposing in time to end "
                         "before it (up to %g s before). Cut off all the same (SIGTERM), the run "
                         "notes how long its tasks in flight had run (%s), for the next run's rule"
                         % (DEADLINE_RESERVE_S, CUT_OFF))
    ap.add_argument("--expected-slowdown", type=float, default=EXPECTED_SLOWDOWN,
                    help="how many times its last record's time a task may take, for the "
                         "deadline rule (default %(default)s, for four jobs to a device; a record "
                         "made with more jobs in flight than this run's has waited longer for the "
                         "device lock than it will: each record keeps its run's --jobs)")
    ap.add_argument("--precision", choices=("highest", "high", "medium"),
                    help="float32 matmul precision of the runner (eager, inductor and the search "
                         "follow it, as in a user's process; default: PyTorch's, \"highest\"); "
                         "recorded in each record")
    ap.add_argument("--summary-only", action="store_true", help="rewrite the summary and stop")
    ap.add_argument("--stale", action="store_true",
                    help="the selected tasks whose records lack a candidate family the built-in "
                         "engine proposes from their graph now (benchmarks/trace_vs_records.py), "
                         "slowest first, run again; a task leaves the list once its record has it. "
                         "Then those whose eager timing the host disturbed, then those timed on the "
                         "Python loop (the summary counts both)")
    ap.add_argument("--shortest-first", action="store_true",
                    help="the selected tasks in the order of their last record's time, quickest "
                         "first (those without a record last): for a short call")
    ap.add_argument("--again", action="store_true",
                    help="run the selected tasks (use with --ids) even where they have records: "
                         "after a change to the engine; the new record supersedes the old")
    ap.add_argument("--retry-failed", action="store_true",
                    help="run again the tasks whose latest record is not a measurement")
    ap.add_argument("--python-clock", action="store_true",
                    help="on a GPU, do not build the native timing helpers first (their C++ timed "
                         "call keeps the Python loop's host time out of launch-bound samples)")
    args = ap.parse_args(argv)
    args.data = args.data or (None if args.tasks else str(DEFAULT_DATA))
    if args.precision:
        torch.set_float32_matmul_precision(args.precision)
    started = time.monotonic()
    from torch_cudal1.bench.timing_cpus import apply_work_cpus
    note = apply_work_cpus()   # builds and checks off the cores reserved for timings
    if note:
        print(note, flush=True)
    if not args.out:
        from benchmarks.paths import results_dir
        args.out = str(results_dir("kernelbench", args.device))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # (No TORCHINDUCTOR_CACHE_DIR under --out: the verifier's sandbox only lets candidates write
    # in their own work dirs, and an inductor cache elsewhere reads as a forbidden write.)
    results = out / "results.jsonl"
    from filelock import FileLock
    lock = FileLock(str(out / "results.lock"))
    rows = load_tasks(args)
    cpath = out / "ceilings.json"
    with lock:   # one runner per GPU may start at once: measure the ceilings once
        if cpath.exists() and json.loads(cpath.read_text()).get("device", "").split(":")[0] == \
                args.device.split(":")[0]:
            ceilings = json.loads(cpath.read_text())
        elif args.summary_only:
            ceilings = {}
        else:
            ceilings = measure_ceilings(args.device)
            cpath.write_text(json.dumps(ceilings, indent=1))
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()   # the verifier's children need the memory
    if args.summary_only:
        with lock:
            summary = write_summary(rows, results, ceilings, out, args.total_tasks)
        print((out / "summary.md").read_text())
        return 1 if any(v["incorrect"] for v in summary.values()) else 0
    if args.stale:   # run again, slowest first, what the engine has candidates for that it never
        recs = list(read_results(results).values())   # tried; then what was timed unsoundly
        stale = stale_ids(recs) or []
        for unsound in (eager_disturbed, timed_on_python_clock):
            stale += [r["id"] for r in recs if r.get("status") == "ok" and unsound(r)
                      and r["id"] not in stale]
        rows = sorted((r for r in rows if r["id"] in stale), key=lambda r: stale.index(r["id"]))
        args.again = True
    last = last_times(results)   # each task's time before: for the order and the deadline
    if args.shortest_first:   # most records from a short call: those quickest last time first
        rows = sorted(rows, key=lambda r: (last[r["id"]].get("seconds") or 0.0)
                      if r["id"] in last else float("inf"))
    mine = _shard(rows, args.shard)
    if args.device.startswith("cuda") and not args.python_clock:
        print(native_clock_note(), flush=True)
    host_us = measure_host_launch_us(args.device)
    print(f"host: {host_us:.2f} us per tiny op on {args.device}", flush=True)

    def done_now() -> set:   # --again: the selected tasks run whatever their records say
        return set() if args.again else done_ids(results, args.retry_failed)
    done = done_now()
    todo = [r for r in mine if r["id"] not in done]
    print(f"{len(mine)} tasks ({len(mine) - len(todo)} done) on {args.device}, {args.jobs} at a time; "
          f"results in {out}", flush=True)

    def finish(rec: dict) -> None:
        rec["host_launch_us"] = round(host_us, 3)
        rec["jobs"] = args.jobs   # tasks in flight beside it: its time includes their lock holds
        with lock:
            with results.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            write_summary(rows, results, ceilings, out, args.total_tasks)
        print(f"{rec['id']}: {rec.get('status')} eager {rec.get('eager_ms')} inductor "
              f"{rec.get('inductor_ms')} builtin {rec.get('builtin_ms')} ({rec.get('builtin_winner')}) "
              f"replay {rec.get('replay_ms')} [{rec.get('seconds')} s]", flush=True)

    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
    pending = list(todo)
    claims = out / f"claims-{args.claim}.txt" if args.claim else None

    def can_start(row: dict) -> bool:
        if fits(last.get(row["id"]), time.monotonic() - started, args.deadline_seconds,
                args.expected_slowdown):
            return True
        took = (last.get(row["id"]) or {}).get("seconds")
        print(f"{row['id']}: not started ("
              + (f"its last record took {took} s; " if took else "")
              + f"--deadline-seconds {args.deadline_seconds:.0f} is too close); left for the next "
              "run", flush=True)
        return False

    def claim_next() -> dict | None:
        """The next task no runner has taken and that can end before the deadline: from this
        process's list, or with --claim from the queue all runners with the same tag share.
        (A task that cannot end in time now cannot later either: it leaves the list.)"""
        if claims is None:
            while pending:
                row = pending.pop(0)
                if can_start(row):
                    return row
            return None
        with lock:
            taken = set(claims.read_text().split()) if claims.exists() else set()
            taken |= done_now()
            while pending:
                row = pending.pop(0)
                if row["id"] in taken or not can_start(row):
                    continue
                with claims.open("a") as fh:
                    fh.write(row["id"] + "\n")
                return row
            return None

    deferred: list[dict] = []   # out of device memory beside other jobs: run alone at the end

    def settle(row: dict, rec: dict) -> None:
        if args.jobs > 1 and _out_of_memory(rec) and row not in deferred:
            print(f"{rec['id']}: out of device memory beside other jobs; retried alone at the end",
                  flush=True)
            deferred.append(row)
        else:
            finish(rec)

    running_since: dict[str, float] = {}

    def cut_off(signum, frame):   # the caller's timeout: what was in flight, then its default
        record_cut_off(out, dict(running_since), results)
        os._exit(128 + signum)
    before = signal.signal(signal.SIGTERM, cut_off)
    try:
        with ThreadPoolExecutor(max(1, args.jobs), thread_name_prefix="kb-task") as pool:
            running: dict = {}
            while pending or running:
                while pending and len(running) < max(1, args.jobs):
                    if args.max_seconds and time.monotonic() - started > args.max_seconds:
                        print(f"stopping: --max-seconds {args.max_seconds:.0f} reached", flush=True)
                        pending = []
                        break
                    row = claim_next()
                    if row is None:
                        break
                    budget = search_budget(args.task_timeout, time.monotonic() - started,
                                           args.deadline_seconds, last.get(row["id"]))
                    running_since[row["id"]] = time.monotonic()
                    running[pool.submit(_run_task_safely, row, args, ceilings, budget)] = row
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    row = running.pop(f)
                    running_since.pop(row["id"], None)
                    settle(row, f.result())
        for row in deferred:   # this device to themselves now (a task cut off here is not recorded:
            if args.max_seconds and time.monotonic() - started > args.max_seconds:   # next run's)
                print(f"{row['id']}: not retried (--max-seconds reached); left for the next run", flush=True)
                continue
            if not can_start(row):
                continue
            running_since[row["id"]] = time.monotonic()
            finish(_run_task_safely(row, args, ceilings, search_budget(
                args.task_timeout, time.monotonic() - started, args.deadline_seconds,
                last.get(row["id"]))))
            running_since.pop(row["id"], None)
    finally:   # main() called inside another program (tests) leaves its handler as it was
        signal.signal(signal.SIGTERM, before)
    with lock:
        summary = write_summary(rows, results, ceilings, out, args.total_tasks)
    print((out / "summary.md").read_text())
    return 1 if any(v["incorrect"] for v in summary.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
