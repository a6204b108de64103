"""Real architectures end to end: eager, inductor (default, max-autotune), cudal1.

    PYTHONPATH=. python3 benchmarks/real_models.py [--models resnet18,bert,gpt2] [--dtypes fp32,bf16]
        [--max-autotune] [--small] [--out DIR]

Inference with a server-like batch, random weights built from configs (no downloads). For cudal1:
latency after the search, the cold search time (first call with an empty cache) and the warm-start
time (a fresh process whose first call finds the cache filled). Writes ``real_models.json`` and
``real_models.md`` under ``--out`` (default ``$OUT`` or benchmarks/results).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def build(name: str, small: bool, device: str, dtype):
    """(model, example inputs) for a named architecture, or None when its library is missing."""
    torch.manual_seed(0)
    if name == "resnet18":
        try:
            import torchvision
        except ImportError:
            return None
        model = torchvision.models.resnet18(weights=None)
        x = torch.randn(2 if small else 32, 3, 64 if small else 224, 64 if small else 224)
        inputs = (x,)
    elif name in ("bert", "gpt2"):
        try:
            import transformers
        except ImportError:
            return None
        b, s = (2, 16) if small else (32, 128)
        if name == "bert":
            cfg = transformers.BertConfig(hidden_size=128 if small else 768,
                                          num_attention_heads=4 if small else 12,
                                          intermediate_size=256 if small else 3072)
            cfg._attn_implementation = "sdpa"
            model = transformers.models.bert.modeling_bert.BertLayer(cfg)
        else:
            cfg = transformers.GPT2Config(n_embd=128 if small else 768, n_head=4 if small else 12)
            cfg._attn_implementation = "sdpa"
            model = transformers.models.gpt2.modeling_gpt2.GPT2Block(cfg)
        inputs = (torch.randn(b, s, cfg.hidden_size),)
    else:
        raise ValueError(f"unknown model {name}")

    class First(torch.nn.Module):
        """Return the first output only (transformers blocks return tuples with caches)."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            out = self.m(x)
            return out[0] if isinstance(out, (tuple, list)) else out
    model = First(model).eval().to(device=device, dtype=dtype)
    return model, tuple(x.to(device=device, dtype=dtype) for x in inputs)


def latency_ms(fn, inputs, device: str, reps: int = 20) -> float:
    """Median wall milliseconds per call; the device to itself (the device lock: searches or
    benchmark runners sharing the GPU wait while this runs)."""
    from torch_cudal1.bench.device_lock import DeviceLock
    from torch_cudal1.bench.timing_cpus import timing_cpus
    lock = DeviceLock(device)
    try:
        with lock.exclusive(), timing_cpus({}):   # and the host cores reserved for timings
            return _latency_ms(fn, inputs, device, reps)
    finally:
        lock.close()


def _latency_ms(fn, inputs, device: str, reps: int) -> float:
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        times = []
        for _ in range(reps):
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cudal1_compile(model, options: dict):
    try:
        return torch.compile(model, backend="cudal1", options=options)
    except Exception:  # noqa: BLE001 - not pip-installed: the entry point is missing
        from torch_cudal1.backend import cudal1_backend
        return torch.compile(model, backend=cudal1_backend, options=options)


def first_call_s(compiled, inputs, device: str) -> float:
    t0 = time.perf_counter()
    with torch.no_grad():
        compiled(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def cudal1_options(cache_dir: str, mode: str = "search") -> dict:
    return {"cache_dir": cache_dir, "engine": "builtin", "mode": mode, "rounds": 2,
            "time_budget_s": 300.0, "progress": False}


def child_warm(args) -> int:
    """In a fresh process: the first call against a warm cache (cache-only: no search)."""
    model, inputs = build(args.model, args.small, args.device, DTYPES[args.dtype])
    compiled = cudal1_compile(model, cudal1_options(args.cache, "cache-only"))
    s = first_call_s(compiled, inputs, args.device)
    print(json.dumps({"warm_start_s": s, "warm_latency_ms": latency_ms(compiled, inputs, args.device)}))
    return 0


def run_one(name: str, dtype_name: str, args) -> dict | None:
    built = build(name, args.small, args.device, DTYPES[dtype_name])
    if built is None:
        return None
    model, inputs = built
    rec = {"model": name, "dtype": dtype_name, "batch": int(inputs[0].shape[0])}
    rec["eager_ms"] = latency_ms(model, inputs, args.device)
    torch._dynamo.reset()
    ind = torch.compile(model)
    rec["inductor_compile_s"] = first_call_s(ind, inputs, args.device)
    rec["inductor_ms"] = latency_ms(ind, inputs, args.device)
    if args.max_autotune:
        torch._dynamo.reset()
        ma = torch.compile(model, mode="max-autotune-no-cudagraphs")
        rec["max_autotune_compile_s"] = first_call_s(ma, inputs, args.device)
        rec["max_autotune_ms"] = latency_ms(ma, inputs, args.device)
    if not args.skip_cudal1:
        cache = tempfile.mkdtemp(prefix="cudal1-real-")
        torch._dynamo.reset()
        c = cudal1_compile(model, cudal1_options(cache))
        rec["cudal1_cold_search_s"] = first_call_s(c, inputs, args.device)
        rec["cudal1_ms"] = latency_ms(c, inputs, args.device)
        cmd = [sys.executable, __file__, "--child-warm", "--model", name, "--dtype", dtype_name,
               "--cache", cache, "--device", args.device] + (["--small"] if args.small else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            rec.update(json.loads(p.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            rec["warm_error"] = (p.stderr or p.stdout)[-500:]
    torch._dynamo.reset()
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet18,bert,gpt2")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--skip-cudal1", action="store_true")
    ap.add_argument("--small", action="store_true", help="tiny shapes (a CPU smoke run)")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--child-warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_warm:
        return child_warm(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recs = []
    for name in args.models.split(","):
        for dt in args.dtypes.split(","):
            rec = run_one(name.strip(), dt.strip(), args)
            if rec is None:
                print(f"{name}: library not installed, skipped", flush=True)
                continue
            print(json.dumps(rec), flush=True)
            recs.append(rec)
    (out / "real_models.json").write_text(json.dumps(recs, indent=1))
    cols = ["model", "dtype", "batch", "eager_ms", "inductor_ms", "max_autotune_ms", "cudal1_ms",
            "cudal1_cold_search_s", "warm_start_s"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in recs:
        lines.append("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, "-"))
                                       for c in cols) + " |")
    (out / "real_models.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
