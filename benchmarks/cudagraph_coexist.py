"""Which CUDA-graph users can share a process: cudal1 (its CUDA-graph replays), torch.compile's
reduce-overhead and max-autotune (cudagraph trees), max-autotune without CUDA graphs.

A process holding cudal1, reduce-overhead and max-autotune versions of one GPT-2 block (bf16,
batch 32) once died in its latency loop with ``unspecified launch failure`` (cudagraph trees
empty cuBLAS's cached workspaces, which cudal1's captures had baked in; fixed since). Here
each combination runs in its own process with ``CUDA_LAUNCH_BLOCKING=1`` and a synchronisation
after every call, so the line printed last before a fault names the call that faulted. One JSON
line per combination (``coexist.jsonl`` under --out).

    PYTHONPATH=. python3 benchmarks/cudagraph_coexist.py --model gpt2 --dtype bf16 --out DIR
    # the real_models.py process, launches asynchronous, then with one variant less each:
    ... --no-blocking --combos eager+inductor+reduce_overhead+cudal1+cudal1_plain,inductor+reduce_overhead+cudal1
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# "a+b": a's first call (its compile, cudal1's search) comes before b's
COMBOS = ["max_autotune", "reduce_overhead", "cudal1", "reduce_overhead+cudal1",
          "max_autotune+cudal1", "cudal1+reduce_overhead", "reduce_overhead+max_autotune",
          "max_autotune_nocg+cudal1"]


def child(args) -> int:
    import torch

    from benchmarks.real_models import DTYPES, build, cudal1_compile, cudal1_options
    model, inputs, _ = build(args.model, False, "cuda", DTYPES[args.dtype])
    fns = {}
    for name in args.combo.split("+"):
        if name == "cudal1":   # its CUDA graphs offered even beside live cudagraph trees
            fns[name] = cudal1_compile(model, dict(cudal1_options(args.cache), rounds=0,
                                                   arbitrate_cudagraph="on"))
        elif name == "cudal1_plain":
            fns[name] = cudal1_compile(model, dict(cudal1_options(args.cache), rounds=0,
                                                   arbitrate_cudagraph="off"))
        elif name == "eager":
            fns[name] = model
        elif name == "inductor":
            fns[name] = torch.compile(model)
        else:
            mode = {"reduce_overhead": "reduce-overhead", "max_autotune": "max-autotune",
                    "max_autotune_nocg": "max-autotune-no-cudagraphs"}[name]
            fns[name] = torch.compile(model, mode=mode)
    ref = None
    with torch.no_grad():
        ref = model(*inputs).float()
        for r in range(args.rounds):
            for name, fn in fns.items():
                print(f"call {name} round {r}", flush=True)
                out = fn(*inputs)
                torch.cuda.synchronize()
                err = (out.float() - ref).abs().max().item()
                print(f"  ok {name} round {r} max_abs_err {err:.3g}", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--combos", default=",".join(COMBOS))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--no-blocking", action="store_true",
                    help="launches asynchronous as in real use (a race shows only then); the "
                         "faulting call is then known only to within the last synchronisation")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--combo", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="cudal1-coexist-")   # shared: one cold search in all
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not args.no_blocking:
        env["CUDA_LAUNCH_BLOCKING"] = "1"
    for combo in args.combos.split(","):
        t0 = time.monotonic()
        cmd = [sys.executable, __file__, "--child", "--combo", combo, "--model", args.model,
               "--dtype", args.dtype, "--cache", cache, "--rounds", str(args.rounds)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
            rc, text = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            rc, text = "timeout", (e.stdout or b"").decode() + (e.stderr or b"").decode()
        (out / f"coexist_{combo}.log").write_text(text)
        calls = [ln for ln in text.splitlines() if ln.startswith("call ")]
        faults = [ln for ln in text.splitlines() if "Error" in ln and "CUDA" in ln]
        rec = {"model": args.model, "dtype": args.dtype, "combo": combo, "rc": rc,
               "blocking": not args.no_blocking,
               "seconds": round(time.monotonic() - t0, 1), "last_call": calls[-1] if calls else None,
               "fault": faults[-1][:300] if faults else None}
        print(json.dumps(rec), flush=True)
        with (out / "coexist.jsonl").open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
