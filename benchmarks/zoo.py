"""The model zoo (``benchmarks/zoo_models.py``) through inductor and cudal1, against eager: the
pass rate of each on the same list, the list drawn from PyTorch's own Dynamo benchmark suites.

    python benchmarks/zoo.py [--models a,b] [--suites huggingface,timm,torchbench,patterns]
                             [--out benchmarks/results/zoo/cpu] [--timeout 900]
    python benchmarks/zoo.py --device cuda --size realistic --search default --budget 60 \
        --steady 20 --backends inductor,inductor:reduce-overhead,cudal1 --jobs 3 \
        --out benchmarks/results/zoo/h200

Each model runs in a child process per backend (a crash or a hang costs that row only): built
with a fixed seed, called eagerly, then compiled and called twice; the outputs must equal eager's
(``zoo_models.compare``). cudal1 runs with a fast search (eager as the only baseline, no engine
round: what is measured here is capture, search, cache and serving, not the engines), then a
second process is served from its cache in ``cache-only`` mode. A row is ``pass`` (outputs equal),
``wrong`` (outputs differ), ``crash`` (an exception reached the caller) or ``timeout``; cudal1's
rows say how many graphs it served from a search, fell back, or hit in the second process.

``--size realistic`` builds the entries ``benchmarks/zoo_realistic.py`` has at their published
sizes, ``--device cuda`` runs them on the GPU, ``--search default`` searches with the product's
defaults (``--budget`` seconds per graph), ``--steady N`` adds the steady-state time of eager and
of the compiled model, and a backend ``inductor:MODE`` is ``torch.compile(mode=MODE)``.

Writes ``records.jsonl`` (one line per model and backend, appended as they finish; ``--resume``
skips those done) and ``zoo.md`` (the table, the pass rates, the command) under ``--out``.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
FAST = {"baselines": "eager", "rounds": 0, "trials": 1}


def _steady_ms(fn, device: str, n: int) -> float:
    """Median milliseconds of one call over ``n`` calls (each waited for on the device)."""
    times = []
    for _ in range(n):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return round(statistics.median(times), 4)


def child(args) -> dict:
    """One model through one backend, in this process; the record."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.zoo_models import BY_NAME, call, compare, compile_entry
    from torch_cudal1.warm import to_device
    entry = BY_NAME[args.child]
    rec = {"model": entry.name, "suite": entry.suite, "anchor": entry.anchor,
           "backend": args.backend + (" (2nd process)" if args.cache_only else ""),
           "dtype": entry.dtype, "size": args.size, "device": args.device,
           "env": {"torch": torch.__version__, "python": platform.python_version(),
                   "where": (torch.cuda.get_device_name() if args.device.startswith("cuda")
                             else f"{platform.machine()}, {os.cpu_count()} CPUs")}}
    if args.size == "realistic":
        from benchmarks.zoo_realistic import REALISTIC
        model, inputs = REALISTIC[entry.name]()
    else:
        model, inputs = entry.build()
    model, inputs = model.to(args.device), to_device(inputs, args.device)
    backend, _, mode = args.backend.partition(":")        # inductor:max-autotune is a mode
    with torch.no_grad():
        expected = call(entry, model, inputs)
        opts = None
        if backend == "cudal1":
            opts = dict(FAST if args.search == "fast" else {}, cache_dir=args.cache_dir,
                        mode="cache-only" if args.cache_only else "search")
            if args.budget:
                opts["time_budget_s"] = args.budget
        try:
            if mode:
                target = model.forward if entry.run == "generate" else model
                compiled = torch.compile(target, backend=backend, mode=mode)
            else:
                compiled = compile_entry(entry, model, backend, opts)
            t0 = time.monotonic()
            first = call(entry, model, inputs, compiled)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            rec["first_call_s"] = round(time.monotonic() - t0, 2)
            again = call(entry, model, inputs, compiled)
            if args.steady:
                rec["eager_ms"] = _steady_ms(lambda: call(entry, model, inputs), args.device,
                                             args.steady)
                rec["steady_ms"] = _steady_ms(lambda: call(entry, model, inputs, compiled),
                                              args.device, args.steady)
        except Exception as e:  # noqa: BLE001 - the row says it
            rec.update(status="crash", detail=f"{type(e).__name__}: {str(e)[:300]}",
                       trace=traceback.format_exc()[-2000:])
            return rec
    ok1, err1, d1 = compare(expected, first, entry.dtype)
    ok2, err2, d2 = compare(expected, again, entry.dtype)
    rec.update(status="pass" if ok1 and ok2 else "wrong", max_err=max(err1, err2),
               detail=d1 or d2)
    if backend == "cudal1":
        import torch_cudal1.counters as rt
        from torch_cudal1.cache.store import CacheStore
        store = CacheStore(args.cache_dir)
        entries = [store.load(k["key"], check=False) for k in rt.SEEN_KEYS]
        rec["winners"] = sorted({e.winner_origin for e in entries if e is not None})
        rec.update(cudal1_counts())
    return rec


def cudal1_counts() -> dict:
    """What this process's cudal1 did: graphs (keys) asked for, cache hits, searches, graphs
    that fell back (and at which stage), sizes served by the shape-generic implementation."""
    import torch_cudal1.counters as rt
    s = rt.STATS
    return dict(graphs=len(rt.SEEN_KEYS), hits=sum(k["hit"] for k in rt.SEEN_KEYS),
                searches=s.get("searches", 0), fallbacks=s.get("fallbacks", 0),
                generic_sizes=s.get("generic_sizes", 0),
                fallback_stages={k.split(":", 1)[1]: v for k, v in s.items()
                                 if k.startswith("fallback:")})


def run_child(name: str, backend: str, cache_dir: str, timeout: float, cache_only=False,
              extra: list | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--backend", backend,
           "--cache-dir", cache_dir] + (["--cache-only"] if cache_only else []) + (extra or [])
    return child_record(cmd, name, backend + (" (2nd process)" if cache_only else ""), timeout,
                        cudal1=backend == "cudal1")


def child_record(cmd: list, name: str, label: str, timeout: float, cudal1: bool) -> dict:
    """Run a benchmark's child command (the repository on its path): its record, the last JSON
    line it prints, or a ``timeout`` / ``crash`` record naming why; cudal1's failure lines kept."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": name, "backend": label, "status": "timeout",
                "detail": f"over {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"model": name, "backend": label, "status": "crash",
                "detail": f"child exited {p.returncode}: "
                + (p.stderr.strip().splitlines() or ["?"])[-1][:300]}
    rec = json.loads(lines[-1])
    rec["wall_s"] = round(time.monotonic() - t0, 1)
    if cudal1 and p.stderr:
        rec["warnings"] = [ln for ln in p.stderr.splitlines() if " failed for " in ln][:5]
    return rec


# ---------------------------------------------------------------- the table

def _cell(rec: dict | None) -> str:
    if rec is None:
        return "-"
    s = rec["status"]
    if s != "pass":
        return f"**{s}**"
    if "graphs" not in rec:
        return "pass"
    if rec["backend"].endswith("(2nd process)"):
        return f"pass ({rec['hits']}/{rec['graphs']} hits)"
    extra = f"{rec['searches']} searched" + (f", {rec['fallbacks']} fell back"
                                             if rec["fallbacks"] else "")
    if rec.get("generic_sizes"):
        extra += f", {rec['generic_sizes']} new sizes generic"
    return f"pass ({extra})"


def markdown(recs: list[dict], command: str, args=None) -> str:
    from benchmarks.zoo_models import BY_NAME
    by = {(r["model"], r["backend"]): r for r in recs}
    models = list(dict.fromkeys(r["model"] for r in recs))
    base = (args.backends if args else "inductor,cudal1").split(",")
    backends = [x for b in base for x in ([b, b + " (2nd process)"] if b == "cudal1" else [b])]
    device = args.device if args else "cpu"
    env = next((r["env"] for r in recs if r.get("env")), None) or {
        "torch": torch.__version__, "python": platform.python_version(),
        "where": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    search = (f"`{json.dumps(FAST)}` (a fast search: capture, search, cache and serving are "
              "measured, not the engines)") if not args or args.search == "fast" else \
        ("the product's defaults" + (f" with `time_budget_s={args.budget:g}` per graph"
                                     if args.budget else ""))
    size = "at the published configurations and serving batches of " \
           "`benchmarks/zoo_realistic.py`" if args and args.size == "realistic" else \
           "at tiny configurations"
    lines = [f"# Model zoo on {device}: {', '.join(base)} against eager, {size}", "",
             "Produced by (a run, and the runs that resumed it):", "", "```",
             command, "```", "",
             f"torch {env['torch']}, Python {env['python']}, {env['where']}. cudal1 "
             f"options: {search}; its second process runs in `cache-only` mode on the first "
             "one's cache.", ""]
    lines += ["## Pass rates", "", "| suite | models | " + " | ".join(backends) + " |",
              "|---|---|" + "---|" * len(backends)]
    suites = sorted({BY_NAME[m].suite for m in models})
    for suite in suites + ["all"]:
        ms = [m for m in models if suite == "all" or BY_NAME[m].suite == suite]
        cells = []
        for b in backends:
            rows = [by.get((m, b)) for m in ms]
            n = sum(1 for r in rows if r and r["status"] == "pass")
            ran = sum(1 for r in rows if r)
            cells.append(f"{n}/{ran}" + (f" ({len(ms) - ran} not run)" if ran < len(ms) else ""))
        lines.append(f"| {suite} | {len(ms)} | " + " | ".join(cells) + " |")
    for b in backends:
        bad = [r for r in recs if r["backend"] == b and r["status"] != "pass"]
        for r in bad:
            lines.append(f"\n- {b} on {r['model']}: {r['status']}: {r.get('detail', '')}")
    planned = [n for ln in command.splitlines() if "--models " in ln
               for n in ln.split("--models ", 1)[1].split()[0].split(",")]
    missing = [n for n in dict.fromkeys(planned) if n not in models]
    if missing:
        lines += ["", f"Listed but not run yet ({len(missing)}; `--resume` runs them): "
                  + ", ".join(missing) + "."]
    lines += ["", "## Models", "",
              "A cudal1 cell counts the graphs it searched and cached, those that fell back "
              "(a stage failed), and the sizes a generation met after its first, served at once "
              "by the shape-generic implementation; the second process's cell counts the keys it "
              "asked for that the cache held (a generation's later sizes are searched in the "
              "background from their second call, so some may be missing).", "",
              "| model | suite | stands for | dtype | inductor | cudal1 | cudal1, 2nd process |",
              "|---|---|---|---|---|---|---|"]
    for m in models:
        e = BY_NAME[m]
        lines.append(f"| {m} | {e.suite} | {e.anchor} | {e.dtype} | "
                     + " | ".join(_cell(by.get((m, b))) for b in backends) + " |")
    timed = [r for r in recs if r.get("steady_ms")]
    if timed:
        jobs = getattr(args, "jobs", 1) if args else 1
        lines += ["", "## Time to first result and steady state", "",
                  "First call: seconds from the compiled model's first call to its result (the "
                  "compile, and for cudal1 its search, or the cache load in the second process). "
                  "Steady state: the median of the timed calls, eager timed in the same process "
                  "just before. A cudal1 row names the winners its cache entries hold."
                  + (f" {jobs} models ran at once, sharing the device and the host's cores, so "
                     "these times are indicative, not a benchmark (`benchmarks/real_models.py` "
                     "times models alone)." if jobs > 1 else ""), "",
                  "| model | dtype | backend | first call s | eager ms | compiled ms | x eager |",
                  "|---|---|---|---|---|---|---|"]
        for r in timed:
            served = f" ({', '.join(r['winners'])})" if r.get("winners") else ""
            lines.append(f"| {r['model']} | {r['dtype']} | {r['backend']}{served} | "
                         f"{r.get('first_call_s', '')} | {r['eager_ms']:.3f} | "
                         f"{r['steady_ms']:.3f} | {r['eager_ms'] / r['steady_ms']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma-separated names, run in this order "
                                                "(default: all available)")
    p.add_argument("--suites", default="", help="comma-separated suites")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "zoo" / "cpu"))
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per model and backend")
    p.add_argument("--backends", default="inductor,cudal1")
    p.add_argument("--resume", action="store_true", help="keep records.jsonl's rows, run the rest")
    p.add_argument("--table-only", action="store_true", help="write zoo.md from records.jsonl")
    p.add_argument("--device", default="cpu", help="cpu | cuda")
    p.add_argument("--size", default="ci", choices=("ci", "realistic"),
                   help="ci: the tiny configurations; realistic: benchmarks/zoo_realistic.py's "
                        "published configurations and serving batches (the entries it has)")
    p.add_argument("--search", default="fast", choices=("fast", "default"),
                   help="cudal1's search: fast (eager as the only baseline, no engine round) or "
                        "the product's defaults")
    p.add_argument("--budget", type=float, default=0.0,
                   help="cudal1's time_budget_s per graph (0: the option's default)")
    p.add_argument("--steady", type=int, default=0,
                   help="also time N calls of eager and of the compiled model (median ms)")
    p.add_argument("--jobs", type=int, default=1, help="models in flight at once")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--backend", help=argparse.SUPPRESS)
    p.add_argument("--cache-dir", help=argparse.SUPPRESS)
    p.add_argument("--cache-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args), default=str), flush=True)
        return 0

    sys.path.insert(0, str(ROOT))
    from benchmarks.zoo_models import ZOO
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records_path = out / "records.jsonl"
    command = "python benchmarks/zoo.py " + " ".join(argv if argv is not None else sys.argv[1:])
    recs = []
    if (args.resume or args.table_only) and records_path.exists():
        recs = [json.loads(ln) for ln in records_path.read_text().splitlines() if ln.strip()]
    elif not args.table_only:
        records_path.write_text("")
    if not args.table_only:
        with open(out / "command.txt", "a" if args.resume else "w") as f:
            f.write(command + "\n")
        names = [n for n in args.models.split(",") if n]
        suites = [s for s in args.suites.split(",") if s]
        from benchmarks.zoo_models import BY_NAME
        todo = [BY_NAME[n] for n in names] if names else ZOO      # in the order given
        todo = [e for e in todo if not suites or e.suite in suites]
        done = {(r["model"], r["backend"]) for r in recs}
        cache = tempfile.mkdtemp(prefix="cudal1-zoo-")
        extra = ["--device", args.device, "--size", args.size, "--search", args.search,
                 "--budget", str(args.budget), "--steady", str(args.steady)]
        if args.size == "realistic":
            from benchmarks.zoo_realistic import REALISTIC
            todo = [e for e in todo if e.name in REALISTIC]
        lock = threading.Lock()

        def one_model(e) -> None:
            if not e.available():
                print(f"{e.name}: {e.needs} not installed, skipped", file=sys.stderr)
                return
            for backend in args.backends.split(","):
                runs = [(backend, False)] + ([(backend, True)] if backend == "cudal1" else [])
                for b, second in runs:
                    label = b + (" (2nd process)" if second else "")
                    if (e.name, label) in done:
                        continue
                    rec = run_child(e.name, b, cache, args.timeout, cache_only=second,
                                    extra=extra)
                    with lock:
                        recs.append(rec)
                        with open(records_path, "a") as f:
                            f.write(json.dumps(rec, default=str) + "\n")
                    print(f"{e.name:26} {label:22} {rec['status']:8} {rec.get('wall_s', '')} s "
                          f"{rec.get('detail', '')[:120]}", file=sys.stderr, flush=True)

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            list(pool.map(one_model, todo))
    commands = (out / "command.txt").read_text().strip() if (out / "command.txt").exists() \
        else command
    (out / "zoo.md").write_text(markdown(recs, commands, args))
    print((out / "zoo.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
