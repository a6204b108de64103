"""Cache benchmark: warm start of a real model (fresh process, full cache) against inductor's warm
start with its own cache; per-call dispatch overhead; 4 processes starting together on one cache.

    PYTHONPATH=. python benchmarks/cache_bench.py [--device cuda] [--model gpt2|block] [--repeat 3]

CPU-runnable (searches use the eager baseline and no engine rounds unless --baselines/--rounds
say otherwise). Prints a markdown table; writes it and a JSON copy under --out (default
benchmarks/results/cache_bench/<device>/: cache_bench.md, cache_bench.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The child: builds the model, compiles it with the requested backend, times the first call
# (compile + cache lookup + load + run) and a few steady calls. Prints one JSON line.
CHILD = textwrap.dedent(r"""
    import json, os, sys, time
    t_start = time.perf_counter()
    import torch, torch.nn as nn
    cfg = json.loads(sys.argv[1])
    device = cfg["device"]

    def build():
        torch.manual_seed(0)
        if cfg["model"] == "gpt2":
            from transformers import GPT2Config, GPT2Model
            m = GPT2Model(GPT2Config(n_embd=256, n_layer=4, n_head=4, n_positions=256,
                                     vocab_size=50257, use_cache=False))
            x = (torch.randint(0, 50257, (cfg["batch"], 64)),)
        else:
            class Block(nn.Module):
                def __init__(self, d=256):
                    super().__init__()
                    self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
                    self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
                    self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                def forward(self, x):
                    h = self.ln1(x)
                    x = x + self.attn(h, h, h, need_weights=False)[0]
                    return x + self.mlp(self.ln2(x))
            m = nn.Sequential(Block(), Block())
            x = (torch.randn(cfg["batch"], 64, 256),)
        return m.eval().to(device), tuple(t.to(device) for t in x)

    m, x = build()
    backend = cfg["backend"]
    if backend == "eager":
        c = m
    elif backend == "inductor":
        c = torch.compile(m)
    else:
        import torch_cudal1
        c = torch.compile(m, backend="cudal1", options=cfg.get("options", {}))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    with torch.no_grad():
        t0 = time.perf_counter()
        c(*x)
        sync()
        first = time.perf_counter() - t0
        steady = []
        for _ in range(cfg.get("steady", 5)):
            t1 = time.perf_counter()
            c(*x)
            sync()
            steady.append(time.perf_counter() - t1)
    out = {"first_call_s": first, "process_to_first_result_s": time.perf_counter() - t_start,
           "steady_ms": sorted(steady)[len(steady) // 2] * 1e3 if steady else None}
    if backend == "cudal1":
        out["stats"] = torch_cudal1.stats()
    print(json.dumps(out))
""")

DISPATCH = textwrap.dedent(r"""
    import json, sys, time, torch
    import torch_cudal1
    cfg = json.loads(sys.argv[1])
    device = cfg["device"]
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def fn(x):
        return x * 2 + 1

    x = torch.randn(8, device=device)

    def per_call_us(f, n=2000):
        with torch.no_grad():
            for _ in range(50):
                f(x)
            sync()
            t0 = time.perf_counter()
            for _ in range(n):
                f(x)
            sync()
        return (time.perf_counter() - t0) / n * 1e6

    res = {"eager_us": per_call_us(fn)}
    opts = cfg.get("options", {})
    res["cudal1_static_us"] = per_call_us(torch.compile(fn, backend="cudal1", options=opts))
    torch._dynamo.reset()
    res["cudal1_dynamic_us"] = per_call_us(torch.compile(fn, backend="cudal1", options=opts, dynamic=True))
    torch._dynamo.reset()
    res["inductor_us"] = per_call_us(torch.compile(fn))
    res["stats"] = torch_cudal1.stats()
    print(json.dumps(res))
""")


def _child(code: str, cfg: dict, env: dict, timeout: float = 1800) -> dict:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    full.update(env)
    # The child's log (search progress, warnings) streams to ours: a slow step shows where it is.
    p = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], env=full, text=True,
                       stdout=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"child failed ({p.returncode}); its log is above")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _together(cfg: dict, env: dict, n: int = 4) -> dict:
    """Start ``n`` processes at once on one cache; wall time until the last one is done."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    full.update(env)
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg)], env=full,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"child failed: {err[-3000:]}")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - t0
    stats = [o.get("stats", {}) for o in outs]
    return {"wall_s": wall, "searches": sum(s.get("searches", 0) for s in stats),
            "hits": sum(s.get("cache_hits", 0) for s in stats),
            "lock_waits": sum(s.get("lock_waits", 0) for s in stats),
            "slowest_first_result_s": max(o["process_to_first_result_s"] for o in outs)}


def _median(runs: list[dict], k: str) -> float:
    return statistics.median(r[k] for r in runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if _cuda() else "cpu")
    ap.add_argument("--model", default="block", choices=("block", "gpt2"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per warm-start number")
    ap.add_argument("--baselines", default="eager")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--skip-inductor", action="store_true")
    ap.add_argument("--skip-together", action="store_true",
                    help="no dispatch-overhead and 4-processes stages")
    ap.add_argument("--arbitrate", choices=("auto", "on", "off"),
                    help="cudal1's arbitrate option (default: its own default, auto: GPUs only); "
                         "a warm start follows the kept decision, building inductor's choice again")
    ap.add_argument("--out", default=os.environ.get("OUT"),
                    help="default: benchmarks/results/cache_bench/<device>")
    args = ap.parse_args(argv)
    options = {"baselines": args.baselines, "rounds": args.rounds, "trials": 1}
    if args.arbitrate:
        options["arbitrate"] = args.arbitrate
    base = {"device": args.device, "model": args.model, "batch": args.batch}
    sys.path.insert(0, str(ROOT))
    from benchmarks.paths import results_dir
    out_dir = Path(args.out or results_dir("cache_bench", args.device))
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {"device": args.device, "model": args.model, "batch": args.batch,
                     "options": options}
    def save() -> None:
        """After every stage: a run cut short by a time limit still leaves what it measured."""
        (out_dir / "cache_bench.json").write_text(json.dumps(results, indent=1, default=str))
        (out_dir / "cache_bench.md").write_text(_markdown(results))

    with tempfile.TemporaryDirectory(prefix="cudal1-cache-bench-") as tmp:
        cache, ind = Path(tmp) / "cudal1", Path(tmp) / "inductor"
        env = {"CUDAL1_CACHE_DIR": str(cache), "TORCHINDUCTOR_CACHE_DIR": str(ind)}
        cfg = dict(base, backend="cudal1", options=options)
        print("filling the cudal1 cache (cold search)...", file=sys.stderr, flush=True)
        cold = _child(CHILD, cfg, env)
        results["cudal1_cold_first_call_s"] = cold["first_call_s"]
        results["arbiter_choices"] = sorted(json.loads(p.read_text()).get("choice")
                                            for p in cache.rglob("serve/*.json"))
        runs = [_child(CHILD, cfg, env) for _ in range(args.repeat)]
        assert all(not r["stats"].get("searches") for r in runs), "warm start searched"
        results["cudal1_warm_first_call_s"] = _median(runs, "first_call_s")
        results["cudal1_warm_process_s"] = _median(runs, "process_to_first_result_s")
        results["cudal1_steady_ms"] = _median(runs, "steady_ms")
        eager = [_child(CHILD, dict(base, backend="eager"), env) for _ in range(args.repeat)]
        results["eager_first_call_s"] = _median(eager, "first_call_s")
        results["eager_process_s"] = _median(eager, "process_to_first_result_s")
        results["eager_steady_ms"] = _median(eager, "steady_ms")
        save()
        if not args.skip_inductor:
            print("filling inductor's cache...", file=sys.stderr, flush=True)
            icold = _child(CHILD, dict(base, backend="inductor"), env)
            results["inductor_cold_first_call_s"] = icold["first_call_s"]
            iw = [_child(CHILD, dict(base, backend="inductor"), env) for _ in range(args.repeat)]
            results["inductor_warm_first_call_s"] = _median(iw, "first_call_s")
            results["inductor_warm_process_s"] = _median(iw, "process_to_first_result_s")
            results["inductor_steady_ms"] = _median(iw, "steady_ms")
            save()
        if not args.skip_together:
            print("dispatch overhead...", file=sys.stderr, flush=True)
            results["dispatch"] = _child(DISPATCH, {"device": args.device, "options": options}, env)
            save()
            print("4 processes together...", file=sys.stderr, flush=True)
            cold4 = dict(env, CUDAL1_CACHE_DIR=str(Path(tmp) / "together"))
            results["together_cold"] = _together(cfg, cold4)
            results["together_warm"] = _together(cfg, cold4)
            save()
    print(_markdown(results))
    return 0


def _markdown(r: dict) -> str:
    """The table of what has been measured so far."""
    rows = []
    if "cudal1_warm_first_call_s" in r:
        rows += [
            ("cudal1 cold first call (search, then cache)", f"{r['cudal1_cold_first_call_s']:.2f} s"),
            ("cudal1 warm first call (fresh process, full cache)", f"{r['cudal1_warm_first_call_s']:.2f} s"),
            ("cudal1 warm: process start to first result", f"{r['cudal1_warm_process_s']:.2f} s"),
            ("eager first call / process start to first result",
             f"{r['eager_first_call_s']:.3f} s / {r['eager_process_s']:.2f} s"),
        ]
    if r.get("arbiter_choices"):
        rows.append(("the arbiter's choices (followed on a warm start)", ", ".join(r["arbiter_choices"])))
    if "inductor_warm_first_call_s" in r:
        rows += [("inductor cold first call", f"{r['inductor_cold_first_call_s']:.2f} s"),
                 ("inductor warm first call (its own cache)", f"{r['inductor_warm_first_call_s']:.2f} s"),
                 ("inductor warm: process start to first result", f"{r['inductor_warm_process_s']:.2f} s")]
    if "cudal1_steady_ms" in r:
        rows.append(("steady call: eager / cudal1" + (" / inductor" if "inductor_steady_ms" in r else ""),
                     " / ".join(f"{r[k]:.3f} ms" for k in ("eager_steady_ms", "cudal1_steady_ms",
                                                           "inductor_steady_ms") if k in r)))
    if "dispatch" in r:
        d = r["dispatch"]
        rows.append(("per-call overhead, tiny op: eager / cudal1 static / cudal1 dynamic / inductor",
                     f"{d['eager_us']:.1f} / {d['cudal1_static_us']:.1f} / {d['cudal1_dynamic_us']:.1f} / "
                     f"{d['inductor_us']:.1f} us"))
    if "together_warm" in r:
        rows += [
            ("4 processes together, cold cache: wall (searches, waits, hits)",
             f"{r['together_cold']['wall_s']:.1f} s ({r['together_cold']['searches']}, "
             f"{r['together_cold']['lock_waits']}, {r['together_cold']['hits']})"),
            ("4 processes together, warm cache: wall (hits)",
             f"{r['together_warm']['wall_s']:.1f} s ({r['together_warm']['hits']})"),
        ]
    head = (f"## cache benchmark: {r['model']} (batch {r['batch']}) on {r['device']}\n\n"
            "| measure | value |\n|---|---|\n")
    return head + "\n".join(f"| {a} | {b} |" for a, b in rows) + "\n"


def _cuda() -> bool:
    import torch
    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
