"""First call after an async swap and after a warm start, for an inductor winner, against plain
torch.compile's own warm start.

Every measure is a fresh process on its own cache dirs. The winner is inductor's
(``baselines=inductor``, no engine rounds), so the entry's winner calls torch.compile on its
first call: the case where a winner can stall a serving call.

    PYTHONPATH=. python3 benchmarks/swap_bench.py [--device cpu|cuda] [--repeat 3] [--repo DIR]
        [--out DIR]     # default: benchmarks/results/swap/<device>/

``--repo DIR`` runs the children against another checkout of torch_cudal1 (e.g. one without
off-path builds) for a before/after comparison. Rows:

* async, cold cache: the first call (the fallback, while a worker searches), seconds from the
  first call until the winner is swapped in, the first call after the swap, a steady call;
* warm start (fresh process, the entry cached): with inductor's cache dir of the machine that
  made the entry, and with an empty one (an entry from the remote tier or a bundle);
* warm start in async mode, empty inductor cache dir: first call, time to the swap, first call
  after it;
* plain torch.compile: cold first call, warm first call (its own cache dir), steady call; and
  eager's first call.

Prints a markdown table (median over ``--repeat`` runs for the warm rows) and writes it
(``swap_bench.md``) with the raw figures (``swap_bench.json``) to ``--out``; with ``--repo``
the files are named ``swap_bench_<name of the checkout>.*``.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(r"""
    import json, sys, time
    t_start = time.perf_counter()
    import torch, torch.nn as nn
    cfg = json.loads(sys.argv[1])
    device = cfg["device"]
    torch.manual_seed(0)
    d = 256
    m = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.LayerNorm(d))
    m = m.eval().to(device)
    x = torch.randn(16, d, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    if cfg["backend"] == "eager":
        c = m
    elif cfg["backend"] == "inductor":
        c = torch.compile(m)
    else:
        import torch_cudal1
        c = torch.compile(m, backend="cudal1", options=cfg["options"])

    def call():
        t0 = time.perf_counter()
        with torch.no_grad():
            c(x)
        sync()
        return time.perf_counter() - t0

    out = {"first_call_s": call(), "process_to_first_result_s": time.perf_counter() - t_start}
    if cfg.get("wait_swap"):
        import threading
        from torch_cudal1.serve import worker
        t0 = time.perf_counter()
        worker.wait_background(3600)

        def preparing():   # a background build of a cached winner (versions that have one)
            return any(t.name.startswith("cudal1-prepare") for t in threading.enumerate())
        while not torch_cudal1.stats().get("async_swaps") and preparing() \
                and time.perf_counter() - t0 < 3600:
            time.sleep(0.05)
        out["swapped"] = bool(torch_cudal1.stats().get("async_swaps"))
        if out["swapped"]:
            out["until_swap_s"] = time.perf_counter() - t0 + out["first_call_s"]
            out["after_swap_call_s"] = call()
    # the best of 20: on a shared host the median of a 1 ms call measures the neighbours
    out["steady_ms"] = min(call() for _ in range(20)) * 1e3
    if cfg["backend"] == "cudal1":
        out["stats"] = dict(torch_cudal1.stats())
    from torch._dynamo.utils import counters
    out["inductor"] = {k: v for k, v in counters["inductor"].items() if "cache" in k}
    print(json.dumps(out))
""")


def child(cfg: dict, env: dict, repo: Path) -> dict:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    full.update(env)
    # cwd: a neutral dir, or "python -c" would import the package of the current directory first
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=full, text=True,
                       cwd=tempfile.gettempdir(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"child failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def med(rows: list, key: str):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repo", default=str(ROOT), help="torch_cudal1 checkout the children import")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/swap/<device>")
    args = ap.parse_args()
    repo = Path(args.repo).resolve()
    work = Path(tempfile.mkdtemp(prefix="cudal1-swap-bench-"))
    opts = {"baselines": "inductor", "rounds": 0, "trials": 1, "progress": False}
    base = {"device": args.device, "backend": "cudal1"}
    res: dict = {"device": args.device, "repo": str(repo)}

    def env(cache: str, inductor: str) -> dict:
        return {"CUDAL1_CACHE_DIR": str(work / cache), "TORCHINDUCTOR_CACHE_DIR": str(work / inductor),
                "CUDAL1_LOG_LEVEL": "WARNING"}

    t0 = time.time()
    say = lambda m: print(f"[{time.time() - t0:6.0f} s] {m}", file=sys.stderr, flush=True)  # noqa: E731
    say("async, cold cache")
    res["async_cold"] = child(dict(base, options=dict(opts, mode="async"), wait_swap=True),
                              env("cache", "inductor-a"), repo)
    res["warm_same"], res["warm_fresh"], res["warm_async"] = [], [], []
    for i in range(args.repeat):
        say(f"warm starts, run {i + 1}/{args.repeat}")
        res["warm_same"].append(child(dict(base, options=opts), env("cache", "inductor-a"), repo))
        res["warm_fresh"].append(child(dict(base, options=opts), env("cache", f"inductor-f{i}"), repo))
        res["warm_async"].append(child(dict(base, options=dict(opts, mode="async"), wait_swap=True),
                                       env("cache", f"inductor-g{i}"), repo))
    say("plain torch.compile")
    res["inductor_cold"] = child(dict(base, backend="inductor"), env("unused", "inductor-p"), repo)
    res["inductor_warm"] = [child(dict(base, backend="inductor"), env("unused", "inductor-p"), repo)
                            for _ in range(args.repeat)]
    res["eager"] = child(dict(base, backend="eager"), env("unused", "inductor-e"), repo)

    a, s = res["async_cold"], res["inductor_warm"]
    fmt = lambda v, unit="s": "-" if v is None else (f"{v:.3f} s" if unit == "s" else f"{v:.2f} ms")  # noqa: E731
    rows = [
        ("async, cold cache: first call (fallback while the worker searches)", fmt(a["first_call_s"])),
        ("async, cold cache: first call until the winner is swapped in", fmt(a.get("until_swap_s"))),
        ("**async: first call after the swap**", fmt(a.get("after_swap_call_s"))),
        ("async: best of 20 steady calls", fmt(a["steady_ms"], "ms")),
        ("**warm start, inductor cache of the machine that made the entry: first call**",
         fmt(med(res["warm_same"], "first_call_s"))),
        ("warm start, same: process start to first result",
         fmt(med(res["warm_same"], "process_to_first_result_s"))),
        ("**warm start, empty inductor cache (entry from another machine): first call**",
         fmt(med(res["warm_fresh"], "first_call_s"))),
        ("warm start in async mode, empty inductor cache: first call (a version without "
         "off-path builds serves the winner at once: no swap)",
         fmt(med(res["warm_async"], "first_call_s"))),
        ("warm start in async mode: until the winner is swapped in",
         fmt(med(res["warm_async"], "until_swap_s"))),
        ("warm start in async mode: first call after the swap",
         fmt(med(res["warm_async"], "after_swap_call_s"))),
        ("plain torch.compile: cold first call", fmt(res["inductor_cold"]["first_call_s"])),
        ("**plain torch.compile: warm first call (its own cache)**", fmt(med(s, "first_call_s"))),
        ("plain torch.compile: process start to first result", fmt(med(s, "process_to_first_result_s"))),
        ("best of 20 steady calls: eager / cudal1 warm / torch.compile",
         f"{res['eager']['steady_ms']:.2f} / {med(res['warm_same'], 'steady_ms'):.2f} / "
         f"{med(s, 'steady_ms'):.2f} ms"),
        ("eager first call", fmt(res["eager"]["first_call_s"])),
    ]
    hits = lambda r: r.get("inductor", {})  # noqa: E731
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = [f"## swap benchmark: MLP block (256 -> 1024 -> 256, LayerNorm; batch 16), inductor "
             f"winner, {args.device}", "",
             f"children import torch_cudal1 from `{repo}`; median of {args.repeat} for warm rows; "
             f"{os.cpu_count()} CPUs, load average {load:.1f} at the end", "",
             "| measure | value |", "|---|---|"]
    table += [f"| {k} | {v} |" for k, v in rows]
    table += ["", "inductor cache lookups in the serving process (FX graph cache):", "",
              f"- async swap: {hits(a)}", f"- warm start, same machine: {hits(res['warm_same'][0])}",
              f"- warm start, empty inductor cache: {hits(res['warm_fresh'][0])}",
              f"- plain torch.compile warm: {hits(s[0])}"]
    text = "\n".join(table) + "\n"
    print(text)
    sys.path.insert(0, str(ROOT))
    from benchmarks.paths import results_dir
    out = Path(args.out or results_dir("swap", args.device))
    out.mkdir(parents=True, exist_ok=True)
    stem = "swap_bench" if repo == ROOT else f"swap_bench_{repo.name}"
    res["command"] = "PYTHONPATH=. python3 " + " ".join(shlex.quote(a) for a in sys.argv)
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
