"""Which KernelBench tasks the built-in engine's graph capture handles.

    PYTHONPATH=. python benchmarks/trace_coverage.py [--level N] [--ids L1_1,L2_3] [--jobs 2]
        [--timeout 120] [--numeric-gflops 2] [--out benchmarks/results/trace_coverage/cpu] [--data FILE]

Per task, in a forked child with a timeout, stage by stage (a task fails at the first that
raises): ``load`` (the task's own imports), ``trace`` (``trace_task`` on device "cpu"),
``rewrite`` (``apply_rewrites``), ``render`` (``render_candidate_source``, whether or not a rewrite
fired) and ``exec``: the rendered ``ModelNew`` and ``Model`` run on fake tensors (state swapped
for fake copies as ``trace_task`` does: no kernels, no memory) and must agree in output
structure, shapes and dtypes. Capture itself never touches real input sizes, so it costs seconds
whatever the task; the child's peak RSS is recorded all the same.

Then, only where the reference's forward is cheap (FLOPs counted on the fake run, state+inputs
bytes), a ``numeric`` check on real CPU values: Model and ModelNew from one seed, two calls each,
outputs and in-place-updated inputs compared. It does not decide "ok" (capture coverage does);
it is reported beside it, as it catches renderings that run but compute something else.

Writes ``<name>.md`` and ``.json`` under --out, the command at the top.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT / ".carry" / "kernelbench" / "cudal1_h100_dev.jsonl"


def load_rows(path: str, level: int | None, ids: str | None) -> list[dict]:
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            rows.append({"id": f"L{r['level_id']}_{r['task_id']}", "level": int(r["level_id"]),
                         "ref_code": r["ref_code"]})
    if level:
        rows = [r for r in rows if r["level"] == level]
    if ids:
        want = ids.split(",")
        rows = [r for r in rows if r["id"] in want]
    return rows


def _first_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return msg[0][:200] if msg else ""


def _build(cls, init, meta: bool):
    import torch
    if meta:
        try:
            with torch.device("meta"):
                return cls(*init).eval()
        except Exception:  # noqa: BLE001 - init that needs real values (as trace_task does)
            pass
    return cls(*init).eval()


def _fake_call(model, fins, mode):
    """``model(*fins)`` on fake CPU tensors: its state is swapped for fake copies, as
    ``trace_task`` does, so no kernel runs and no memory is allocated."""
    import torch

    from torch_cudal1.graph.trace import _faker, _state_tensors
    names, tensors = _state_tensors(model)
    fake = _faker(mode, torch.device("cpu"))
    # Parameters stay nn.Parameters (code may look them up as such: ``get_parameter``).
    sd = {n: torch.nn.Parameter(fake(t.detach()), requires_grad=False)
          if isinstance(t, torch.nn.Parameter) else fake(t.detach()) for n, t in zip(names, tensors)}
    with mode, torch.no_grad():
        return torch.func.functional_call(model, sd, tuple(fins))


def exec_check(task, source: str) -> dict:
    """Run ``ModelNew`` (from ``source``) and ``Model`` on fake CPU tensors; compare outputs'
    structure, shapes and dtypes. Returns the reference's FLOPs and state+input bytes."""
    import torch
    import torch.utils._pytree as pytree
    from torch.utils.flop_counter import FlopCounterMode

    from torch_cudal1.graph.trace import _fake_mode, _faker, _meta_inputs, _state_tensors
    from torch_cudal1.task import load_source
    mod = load_source(source, f"cudal1_cov_{task.source_hash}")
    init = list(mod.get_init_inputs())
    inputs = _meta_inputs(mod)
    mode = _fake_mode()
    fake = _faker(mode, torch.device("cpu"))
    fins = [fake(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    ref = _build(mod.Model, init, True)
    counter = FlopCounterMode(display=False)
    with counter:
        want = _fake_call(ref, fins, mode)
    got = _fake_call(_build(mod.ModelNew, init, True), fins, mode)
    gl, gs = pytree.tree_flatten(got)
    wl, ws = pytree.tree_flatten(want)
    if gs != ws:
        raise AssertionError(f"output structure {gs} != {ws}")
    for a, b in zip(gl, wl):
        if isinstance(b, torch.Tensor):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise AssertionError(f"output {tuple(a.shape)}/{a.dtype} != {tuple(b.shape)}/{b.dtype}")
    nbytes = sum(t.numel() * t.element_size() for t in _state_tensors(ref)[1]) + \
        sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    return {"flops": counter.get_total_flops(), "bytes": nbytes}


def numeric_check(task, source: str) -> float:
    """Real values on the CPU: ``Model`` and ``ModelNew`` from the same seed, same inputs, two
    calls each (state the forward reassigns must carry over alike). Returns the worst error."""
    import torch
    import torch.utils._pytree as pytree

    from torch_cudal1.task import load_source
    mod = load_source(source, f"cudal1_num_{task.source_hash}")
    init = list(mod.get_init_inputs())
    torch.manual_seed(0)
    ref = _build(mod.Model, init, False)
    torch.manual_seed(0)
    new = _build(mod.ModelNew, init, False)
    worst = 0.0
    for k in range(2):
        torch.manual_seed(1 + k)
        inputs = list(mod.get_inputs())
        clone = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            torch.manual_seed(100 + k)
            want = ref(*inputs)
            torch.manual_seed(100 + k)
            got = new(*clone)
        for a, b in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
            torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3, equal_nan=True)
            if isinstance(b, torch.Tensor) and b.is_floating_point() and b.numel():
                worst = max(worst, ((a.double() - b.double()).abs().max()
                                    / (b.double().abs().max() + 1e-12)).item())
        for a, b in zip(clone, inputs):   # in-place updates of inputs must match too
            if isinstance(b, torch.Tensor):
                torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3, equal_nan=True)
    return worst


def check_task(row: dict, send, numeric_flops: float, numeric_bytes: float) -> None:
    """One task, stage by stage (runs in the child). Sends the record once the capture is
    judged, then again with the numeric check's result (a timeout there keeps the first)."""
    rec = {"id": row["id"], "level": row["level"], "status": "ok", "stage": None,
           "error": None, "message": None, "fired": [], "counts": {}, "numeric": None}
    t0 = time.perf_counter()
    stage = "load"
    src = task = None
    try:
        import torch
        torch.set_num_threads(1)
        from torch_cudal1.graph.trace import render_candidate_source, trace_task
        from torch_cudal1.rewrites import apply_rewrites
        from torch_cudal1.task import Task
        task = Task(source=row["ref_code"], name=row["id"])
        task.load()   # the task's own imports (a missing package is not the capture's fault)
        stage = "trace"
        traced = trace_task(task, "cpu")
        rec["nodes"] = sum(1 for n in traced.gm.graph.nodes if n.op == "call_function")
        rec["state_updates"] = len(getattr(traced, "state_updates", []))   # (older Traced: none)
        stage = "rewrite"
        res = apply_rewrites(traced.gm)
        rec["fired"], rec["counts"] = res.fired, {k: v for k, v in res.counts.items() if v}
        stage = "render"
        # Rendered even when nothing fired: coverage of the capture, not of the rewrites.
        src = render_candidate_source(task, traced, res.gm)
        stage = "exec"
        rec.update(exec_check(task, src))
    except BaseException as e:  # noqa: BLE001 - every failure is a data point
        rec.update(status="fail", stage=stage, error=type(e).__name__, message=_first_line(e))
        src = None
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    rec["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if src is not None and (rec["flops"] > numeric_flops or rec["bytes"] > numeric_bytes):
        rec["numeric"] = "skipped (large)"
    send.send(rec)
    if src is None or rec["numeric"]:
        return
    t1 = time.perf_counter()
    try:
        rec["numeric"] = "ok"
        rec["rel_error"] = numeric_check(task, src)
    except BaseException as e:  # noqa: BLE001
        rec["numeric"] = f"{type(e).__name__}: {_first_line(e)}"
    rec["numeric_seconds"] = round(time.perf_counter() - t1, 3)
    send.send(rec)


def _child(row: dict, conn, *limits) -> None:
    try:
        check_task(row, conn, *limits)
    finally:
        conn.close()


def run_one(row: dict, timeout: float, numeric_timeout: float, *limits) -> dict:
    ctx = mp.get_context("fork")   # the parent has torch imported: forks start in ms
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(row, send, *limits), daemon=True)
    t0 = time.perf_counter()
    p.start()
    send.close()
    rec = None
    for wait in (timeout, numeric_timeout):
        try:
            if not recv.poll(wait):
                if rec is not None:
                    rec["numeric"] = f"timeout ({numeric_timeout:.0f} s)"
                break
            rec = recv.recv()
        except EOFError:   # the child ended (done, or died)
            break
    p.join(1)
    if p.is_alive():
        p.kill()
        p.join()
    if rec is None:
        why = "Timeout" if time.perf_counter() - t0 >= timeout else f"ChildDied(rc={p.exitcode})"
        rec = {"id": row["id"], "level": row["level"], "status": "fail", "stage": "child",
               "error": why, "message": f"after {time.perf_counter() - t0:.0f} s",
               "fired": [], "counts": {}, "numeric": None,
               "seconds": round(time.perf_counter() - t0, 3)}
    return rec


def reason(r: dict) -> str:
    if r["status"] == "ok":
        return "ok"
    msg = r["message"] or ""
    # trace_task wraps make_fx's errors: the inner exception class is the real reason.
    if msg.startswith("make_fx failed: "):
        return f"{r['stage']}: make_fx {msg.split(': ')[1]}"
    if r["error"] == "TraceError":   # its own reasons: "graph too large: over N ops", ...
        return f"{r['stage']}: {msg.split(':')[0]}"
    return f"{r['stage']}: {r['error']}"


def _numeric_kind(r: dict) -> str:
    n = r.get("numeric") or "none"
    if n in ("ok", "none") or n.startswith(("skipped", "timeout")):
        return n.split(" ")[0]
    return "mismatch" if n.startswith("AssertionError") else "error"


def markdown(records: list[dict], command: str) -> str:
    import torch
    out = [f"# Graph-capture coverage on cpu (torch {torch.__version__})", "",
           f"Command: `{command}`", "",
           "Stages: load -> trace_task -> apply_rewrites -> render_candidate_source -> exec (the "
           "rendered ModelNew vs Model on fake tensors: same output structure, shapes, dtypes). "
           "`numeric`: real CPU values, Model vs ModelNew, two calls, only for cheap tasks "
           "(see the script's docstring).", ""]
    levels = sorted({r["level"] for r in records})
    total_ok = sum(r["status"] == "ok" for r in records)
    out += [f"**{total_ok}/{len(records)} tasks ok.** With a rewrite that removes work: "
            f"{sum(bool(r['fired']) for r in records if r['status'] == 'ok')}.", ""]
    for lv in levels:
        rs = [r for r in records if r["level"] == lv]
        ok = sum(r["status"] == "ok" for r in rs)
        secs = sorted(r["seconds"] for r in rs)
        out += [f"## Level {lv}: {ok}/{len(rs)} ok (median {secs[len(secs) // 2]:.2f} s, "
                f"max {secs[-1]:.2f} s per task)", "", "| reason | count | tasks |", "|---|---|---|"]
        for why, n in Counter(reason(r) for r in rs).most_common():
            ids = [r["id"] for r in rs if reason(r) == why]
            shown = ", ".join(ids[:12]) + (" ..." if len(ids) > 12 else "")
            out.append(f"| {why} | {n} | {shown if why != 'ok' else ''} |")
        fired = Counter(f for r in rs for f in r["fired"])
        if fired:
            out += ["", "Rewrites fired: " + ", ".join(f"{k} ({v})" for k, v in fired.most_common())]
        num = Counter(_numeric_kind(r) for r in rs if r["status"] == "ok")
        out += ["", "Numeric check of the ok ones: " + ", ".join(f"{k} ({v})" for k, v in sorted(num.items())), ""]
    bad = [r for r in records if r["status"] == "ok" and _numeric_kind(r) in ("mismatch", "error")]
    if bad:
        out += ["## Numeric failures (captured, but the candidate disagrees or fails)", "",
                "| task | numeric |", "|---|---|"]
        out += [f"| {r['id']} | {r['numeric']} |".replace("\n", " ") for r in bad]
        out.append("")
    fails = [r for r in records if r["status"] != "ok"]
    if fails:
        out += ["## Failures", "", "| task | stage | error | message |", "|---|---|---|---|"]
        for r in fails:
            msg = (r["message"] or "").replace("|", "\\|")
            out.append(f"| {r['id']} | {r['stage']} | {r['error']} | {msg} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--level", type=int)
    ap.add_argument("--ids", help="comma-separated task ids (L1_12,...)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per task (capture)")
    ap.add_argument("--numeric-timeout", type=float, default=60.0,
                    help="seconds for the real-value check after the capture")
    ap.add_argument("--numeric-gflops", type=float, default=2.0,
                    help="real-value check only where the reference's forward costs at most this")
    ap.add_argument("--numeric-mb", type=float, default=64.0,
                    help="... and its state and inputs take at most this many MB")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "trace_coverage" / "cpu"))
    ap.add_argument("--name", default="trace_coverage_cpu", help="output file stem")
    args = ap.parse_args(argv)
    env = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} " if os.environ.get("PYTHONPATH") else ""
    command = env + "python benchmarks/trace_coverage.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    import torch  # noqa: F401 - imported once here, so the forked children start warm
    import torch_cudal1.graph.trace  # noqa: F401
    import torch_cudal1.rewrites  # noqa: F401
    rows = load_rows(args.data, args.level, args.ids)
    from concurrent.futures import ThreadPoolExecutor
    records = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for rec in pool.map(lambda r: run_one(r, args.timeout, args.numeric_timeout,
                                              args.numeric_gflops * 1e9, args.numeric_mb * 2**20),
                            rows):
            records.append(rec)
            print(f"{rec['id']}: {reason(rec)} {rec.get('message') or ''} fired={rec['fired']} "
                  f"numeric={rec['numeric']} [{rec['seconds']} s]", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(records, command)
    (out / f"{args.name}.md").write_text(md)
    (out / f"{args.name}.json").write_text(json.dumps({"command": command, "records": records},
                                                      indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
