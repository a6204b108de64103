"""Architectures beyond the zoo, called as a user calls them: through inductor and cudal1,
against eager.

    python benchmarks/arch_sweep.py [--models a,b] [--libraries transformers,torchvision,torch]
                                    [--backends inductor,cudal1] [--search fast|default]
                                    [--out benchmarks/results/arch_sweep/cpu] [--timeout 900]
                                    [--resume] [--jobs 1]

Each model (``benchmarks/arch_sweep_models.py``: tiny configurations, random weights) runs in a
child process per backend, so a crash or a hang costs that row only. The child builds it with a
fixed seed, computes eager's answers, then calls the compiled model twice at one size and twice
at another (a new batch and sequence length, or another image size), and, for models that
generate, runs ``generate`` with the model's ``forward`` compiled (greedy, 4 new tokens), each
call from the same seed (models that sample answer as eager only from one random state). Every
answer must equal eager's (``zoo_models.compare``: 1e-4 of the output's scale, integer outputs
and generated tokens exactly). cudal1 then runs a second process on the first one's cache in
``cache-only`` mode, with the same calls.

``--search fast`` (the default) searches with eager as the only baseline and no engine round:
what is measured is capture, search, cache and serving on every graph these models produce, not
the engines. ``--search default`` uses the product's defaults.

A row is ``pass`` (every call equal to eager), ``wrong`` (a call differs: which, and by how much),
``crash`` (an exception reached the caller) or ``timeout``. Writes ``records.jsonl`` (one line per
model and backend, appended as they finish) and ``sweep.md`` under ``--out``. Records of other
models and backends already there are kept (the commands that made them stay listed in
``sweep.md``); ``--resume`` also skips this run's models and backends that have records.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = {"baselines": "eager", "rounds": 0, "trials": 2}
NEW_TOKENS = 4
SEED = 1234


def _seeded(fn, *args):
    import torch
    torch.manual_seed(SEED)
    return fn(*args)


def _call(model, inputs):
    return model(**inputs) if isinstance(inputs, dict) else model(*inputs)


def _generate(model, gen: dict, forward=None):
    """Greedy generation, through ``forward`` where given (how Hugging Face documents
    ``torch.compile`` for generation)."""
    if forward is not None:
        model.forward = forward
    try:
        return model.generate(**gen, max_new_tokens=NEW_TOKENS, do_sample=False)
    finally:
        if forward is not None:
            del model.forward


def child(args) -> dict:
    """One model through one backend, in this process; the record."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    sys.path.insert(0, str(ROOT))
    from benchmarks.arch_sweep_models import builders
    from benchmarks.zoo_models import compare
    library, build = builders()[args.child]
    rec = {"model": args.child, "library": library,
           "backend": args.backend + (" (2nd process)" if args.cache_only else ""),
           "env": {"torch": torch.__version__, "python": platform.python_version(),
                   "where": f"{platform.machine()}, {os.cpu_count()} CPUs"}, "steps": []}
    d = build()
    model = d["model"]
    with torch.no_grad():
        # every call from one seed: models that sample (ViTMAE's random masking) answer as
        # eager only from the same random state
        expected = {"a": _seeded(_call, model, d["a"]), "b": _seeded(_call, model, d["b"])}
        if d["gen"]:
            expected["gen"] = _seeded(_generate, model, d["gen"])
        options = None
        if args.backend == "cudal1":
            options = dict(FAST if args.search == "fast" else {}, cache_dir=args.cache_dir,
                           mode="cache-only" if args.cache_only else "search")
        compiled = torch.compile(model, backend=args.backend, options=options)
        steps = [("a", "a"), ("a", "a"), ("b", "b"), ("b", "b")]
        if d["gen"]:
            steps.append(("generate", "gen"))
        for what, key in steps:
            t0 = time.monotonic()
            step = {"call": what}
            try:
                if what == "generate":
                    got = _seeded(_generate, model, d["gen"], torch.compile(
                        model.forward, backend=args.backend, options=options))
                else:
                    got = _seeded(_call, compiled, d[key])
            except Exception as e:  # noqa: BLE001 - the row says it
                step.update(status="crash", detail=f"{type(e).__name__}: {str(e)[:300]}",
                            trace=traceback.format_exc()[-2000:])
            else:
                ok, err, detail = compare(expected[key], got)
                step.update(status="pass" if ok else "wrong", max_err=err, detail=detail)
            step["seconds"] = round(time.monotonic() - t0, 2)
            rec["steps"].append(step)
    bad = [s for s in rec["steps"] if s["status"] != "pass"]
    rec["status"] = bad[0]["status"] if bad else "pass"
    rec["detail"] = "; ".join(f"{s['call']}: {s['detail']}" for s in bad)[:600]
    if args.backend == "cudal1":
        from benchmarks.zoo import cudal1_counts
        rec.update(cudal1_counts())
    return rec


def run_child(name: str, backend: str, args, cache_dir: str = "", cache_only=False) -> dict:
    from benchmarks.zoo import child_record
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--backend", backend,
           "--search", args.search, "--cache-dir", cache_dir] + (["--cache-only"] if cache_only
                                                                  else [])
    return child_record(cmd, name, backend + (" (2nd process)" if cache_only else ""),
                        args.timeout, cudal1=backend == "cudal1")


# ---------------------------------------------------------------- the table

def _cell(rec: dict | None) -> str:
    if rec is None:
        return "-"
    if rec["status"] != "pass":
        return f"**{rec['status']}**"
    steps = rec.get("steps") or []
    times = f"{steps[0]['seconds']:.0f} s, new size {steps[2]['seconds']:.0f} s" if len(steps) > 2 else ""
    if "graphs" not in rec:
        return f"pass ({times})"
    if rec["backend"].endswith("(2nd process)"):
        return f"pass ({times}; {rec['hits']}/{rec['graphs']} hits)"
    extra = f", {rec['fallbacks']} fell back" if rec.get("fallbacks") else ""
    return f"pass ({times}; {rec['searches']} searched{extra})"


def markdown(recs: list[dict], command: str) -> str:
    backends = []
    for r in recs:
        if r["backend"] not in backends:
            backends.append(r["backend"])
    backends.sort(key=lambda b: (not b.startswith("inductor"), b))
    models, by = [], {}
    for r in recs:
        if r["model"] not in models:
            models.append(r["model"])
        by[(r["model"], r["backend"])] = r
    library = {}
    for r in recs:
        if r.get("library"):
            library.setdefault(r["model"], r["library"])
    libraries = sorted(set(library.values()))
    env = next((r["env"] for r in recs if "env" in r), {})
    lines = [f"# Architecture sweep on {env.get('where', '?')}: inductor and cudal1 against eager",
             "", "Produced by:", "", "```", command, "```", "",
             f"torch {env.get('torch', '?')}, Python {env.get('python', '?')}. Each model: two "
             "calls at one size, two at another, and `generate` (4 tokens) where the model has "
             "it; every answer compared with eager's. cudal1's search is "
             + ("fast (eager as the only baseline, no engine round)" if "--search default"
                not in command else "the product's default")
             + "; its second process runs in `cache-only` mode on the first one's cache.", "",
             "## Pass rates", "", "| library | models | " + " | ".join(backends) + " |",
             "|---|---|" + "---|" * len(backends)]
    for lib in libraries + ["all"]:
        names = [m for m in models if lib in ("all", library.get(m))]
        cells = []
        for b in backends:
            ran = [by[(m, b)] for m in names if (m, b) in by]
            cells.append(f"{sum(r['status'] == 'pass' for r in ran)}/{len(ran)}" if ran else "-")
        lines.append(f"| {lib} | {len(names)} | " + " | ".join(cells) + " |")
    lines += ["", "## Models", "",
              "A cell gives the first call's and the first new-size call's seconds; for cudal1 the "
              "graphs it searched (and those that fell back: a stage failed and the graph ran on "
              "the fallback), for its second process the keys the cache held out of those asked "
              "for (sizes met only once in the first process are not searched, so some miss).",
              "", "| model | library | " + " | ".join(backends) + " |",
              "|---|---|" + "---|" * len(backends)]
    for m in models:
        lib = library.get(m, "?")
        lines.append(f"| {m} | {lib} | " + " | ".join(_cell(by.get((m, b))) for b in backends)
                     + " |")
    bad = [r for r in recs if r["status"] != "pass"]
    if bad:
        lines += ["", "## Not passed", ""]
        lines += [f"- {r['model']} ({r['backend']}): {r['status']}: "
                  + " ".join(r.get("detail", "").split())[:300] for r in bad]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="")
    ap.add_argument("--libraries", default="transformers,torchvision,torch")
    ap.add_argument("--backends", default="inductor,cudal1")
    ap.add_argument("--search", choices=("fast", "default"), default="fast")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/arch_sweep/cpu"))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--child")
    ap.add_argument("--backend")
    ap.add_argument("--cache-dir", default="")
    ap.add_argument("--cache-only", action="store_true")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks.arch_sweep_models import builders
    import importlib.util
    table = builders()
    libraries = args.libraries.split(",")
    names = args.models.split(",") if args.models else [
        n for n, (lib, _) in table.items() if lib in libraries]
    names = [n for n in names if importlib.util.find_spec(table[n][0]) is not None]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "records.jsonl"
    recs = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] \
        if path.exists() else []
    command = "python benchmarks/arch_sweep.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])
    if not args.resume:
        # this run's models and backends are run again; every other record is kept, and the
        # commands that made them stay listed above this one's
        again = {(n, b) for n in names for b in args.backends.split(",")} | \
            {(n, "cudal1 (2nd process)") for n in names if "cudal1" in args.backends.split(",")}
        recs = [r for r in recs if (r["model"], r["backend"]) not in again]
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    if recs and (out / "sweep.md").exists():
        before = (out / "sweep.md").read_text().split("```\n", 1)[1].split("```", 1)[0].strip()
        command = before + "\n" + command
    done = {(r["model"], r["backend"]) for r in recs}
    lock = threading.Lock()

    def keep(rec: dict) -> None:
        with lock:
            recs.append(rec)
            with path.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            (out / "sweep.md").write_text(markdown(recs, command))
            print(f"{rec['model']:28s} {rec['backend']:24s} {rec['status']:8s} "
                  f"{rec.get('wall_s', '')} {rec.get('detail', '')[:160]}", flush=True)

    def one_model(name: str) -> None:
        for backend in args.backends.split(","):
            if backend == "cudal1":
                if {(name, "cudal1"), (name, "cudal1 (2nd process)")} <= done:
                    continue
                with tempfile.TemporaryDirectory(prefix="cudal1-sweep-") as cache:
                    # the second process needs the first one's cache: both run again
                    keep(run_child(name, "cudal1", args, cache))
                    keep(run_child(name, "cudal1", args, cache, cache_only=True))
            elif (name, backend) not in done:
                keep(run_child(name, backend, args))

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(one_model, names))
    (out / "sweep.md").write_text(markdown(recs, command))
    return 0 if all(r["status"] == "pass" for r in recs if r["backend"] != "inductor") else 1


if __name__ == "__main__":
    sys.exit(main())
