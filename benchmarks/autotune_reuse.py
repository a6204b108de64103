"""Does inductor's max-autotune reuse its tuning across processes, and the search's in the user's?

Where the arbiter's max-autotune compile of the user's graph benchmarks every convolution again
although the search (and torch.compile's own max-autotune in another process) tuned the same
shapes with the same inductor cache directory, a cold start pays for the tuning twice (ResNet-18
bf16 on an H200: 143 s became 201 s). Each step below is a fresh process sharing one inductor cache
directory; a table says per step how long its first call took, how many autotune benchmarks it
ran (inductor's ``AUTOTUNE ... benchmarking takes`` lines) and what the autotune cache file
gained (new input keys, new choice hashes: a re-benchmark of known inputs under new hashes
means the choices' keys differ between processes). A step named ``*_nofx`` runs with the FX
graph cache off, so that only the autotune cache can spare it the benchmarks. A search step
keeps its verification work dirs (``keep_workdirs``) and reports, per candidate's child, the
autotune lines it printed; each step also says which files (inductor's system hash) and which
precision its new entries went under, and how many choice hashes each new key got: the search's
child and the user's process tuning one shape apart show up as two files, two precisions or
twice the choices.

    PYTHONPATH=. python3 benchmarks/autotune_reuse.py [--model convnet|resnet18] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODE = "max-autotune-no-cudagraphs"


def build(name: str, device: str):
    import torch
    from torch import nn
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        model, x = torchvision.models.resnet18(), torch.randn(32, 3, 224, 224)
    else:   # three convolutions and a linear layer: the same autotunes, seconds each
        model = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(128, 256, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(256, 1000))
        x = torch.randn(32, 64, 56, 56)
    return model.to(device, torch.bfloat16).eval(), x.to(device, torch.bfloat16)


def first_call(fn, x) -> float:
    import torch
    t0 = time.perf_counter()
    with torch.no_grad():
        fn(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def arbiter_like(gm, example_inputs):
    """A backend that builds Dynamo's graph as cudal1's arbiter does (``compile_fx`` with
    max-autotune's options, on the first call's own inputs)."""
    from torch_cudal1.serve import arbiter
    built = {}

    def run(*args):
        if "fn" not in built:
            built["fn"] = arbiter._alternatives(gm, list(args), autotuned="on")[arbiter.AUTOTUNED]()
        return built["fn"](*args)
    return run


def child(step: str, args) -> int:
    import torch
    from torch._dynamo.utils import counters
    model, x = build(args.model, args.device)
    out = {}
    if step == "default_then_tuned":   # a process that compiled other graphs first
        out["default_s"] = first_call(torch.compile(model), x)
        torch._dynamo.reset()
    if step in ("search", "arbiter"):   # cudal1's search; its arbiter's max-autotune off / on
        from torch_cudal1.serve.backend import cudal1_backend
        opts = {"cache_dir": args.cudal1_cache, "engine": "builtin", "rounds": 2,
                "time_budget_s": 300.0, "progress": False, "keep_workdirs": args.kept,
                "arbitrate_max_autotune": "on" if step == "arbiter" else "off"}
        out["first_call_s"] = first_call(torch.compile(model, backend=cudal1_backend, options=opts), x)
    elif step == "compile_fx":   # the arbiter's own build of max-autotune, without a search
        out["first_call_s"] = first_call(torch.compile(model, backend=arbiter_like), x)
    else:
        out["first_call_s"] = first_call(torch.compile(model, mode=MODE), x)
    out["inductor_counters"] = {k: v for k, v in counters["inductor"].items()
                                if "cache" in k or "autotune" in k}
    print(json.dumps(out))
    return 0


def autotune_entries(cache: Path) -> set:
    """(op, inputs key, precision, choice hash, file) of every autotune timing inductor kept; the
    file is named after inductor's system hash (device, CUDA and Triton versions), so a process
    that computed another hash reads and writes another file."""
    got = set()
    for f in (cache / "cache").glob("*"):
        try:
            data = json.loads(f.read_text())["cache"]
        except (OSError, ValueError, KeyError):
            continue
        for op, by_inputs in data.items():
            for inputs, by_prec in by_inputs.items():
                for prec, by_choice in by_prec.items():
                    got.update((op, inputs, prec, c, f.name[:12]) for c in by_choice)
    return got


def children_autotunes(kept: Path) -> list[dict]:
    """Per verification work dir a search kept (``keep_workdirs``): whether its candidate is
    max-autotune's, and the autotune lines its child printed (tunings it did itself)."""
    rows = []
    for d in sorted(kept.glob("cudal1-search-*/*")):
        log, src = d / "child.log", d / "candidate.py"
        text = log.read_text(errors="replace") if log.exists() else ""
        rows.append({"dir": d.name,
                     "max_autotune": "max-autotune" in (src.read_text() if src.exists() else ""),
                     "autotune_benchmarks": text.count("AUTOTUNE benchmarking takes"),
                     "autotune_tables": text.count("AUTOTUNE ")})
    return rows


def run_step(step: str, args, inductor_cache: Path, before: set) -> tuple[dict, set]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    # cudal1's timing helpers are not what this measures: no nvcc build inside a step
    env.setdefault("CUDAL1_NATIVE", "0")
    if step.endswith("_nofx"):   # inductor's FX graph cache off: only the autotune cache can hit
        env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    kept = Path(tempfile.mkdtemp(prefix="kept-"))   # the search's verification work dirs
    cmd = [sys.executable, __file__, "--child", step.removesuffix("_nofx"), "--model", args.model,
           "--device", args.device, "--cudal1-cache", args.cudal1_cache or "", "--kept", str(kept)]
    t0 = time.perf_counter()
    # A process session of its own, killed whole on a timeout: a step cut off must not leave its
    # builds or compile workers loading the host for what runs next.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=args.step_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        timed_out = True
    rec = {"step": step, "wall_s": round(time.perf_counter() - t0, 1), "rc": p.returncode,
           "autotune_benchmarks": (out + err).count("AUTOTUNE benchmarking takes")}
    try:
        rec.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        rec["error"] = (f"timed out after {args.step_timeout:.0f} s; " if timed_out else "") \
            + (err or out)[-800:]
    if step in ("search", "arbiter"):   # what the arbiter timed (its max-autotune build among them?)
        rec["arbiter"] = [{k: d.get(k) for k in ("winner_origin", "considered", "choice")}
                          for f in Path(args.cudal1_cache).rglob("serve/*.json")
                          for d in [json.loads(f.read_text())]]
    after = autotune_entries(inductor_cache)
    new = after - before
    known_inputs = {(op, inp) for op, inp, *_ in before}
    rec["new_input_keys"] = len({(op, inp) for op, inp, *_ in new} - known_inputs)
    rec["new_choice_hashes_for_known_inputs"] = sum(1 for op, inp, *_ in new
                                                    if (op, inp) in known_inputs)
    # the keys themselves (op, input layouts), so that a step that tuned again can be diffed
    # against an earlier one's (autotune_reuse.json)
    rec["new_keys"] = sorted({f"{op} {inp}" for op, inp, *_ in new})
    # where they went: one system-hash file and one precision each, unless two processes of the
    # step (the search's child, the user's) keyed the same tuning differently
    rec["new_entries_by_file"] = dict(Counter(f for *_, f in new))
    rec["new_entries_by_precision"] = dict(Counter(prec for _, _, prec, _, _ in new))
    # choice hashes per (op, inputs): twice the usual where both processes tuned it apart
    per_key = Counter((op, inp, prec) for op, inp, prec, _, _ in new)
    rec["choices_per_new_key"] = sorted(set(per_key.values()))
    if step.startswith(("search", "arbiter")):
        rec["children"] = children_autotunes(kept)
    shutil.rmtree(kept, ignore_errors=True)
    return rec, after



SEQUENCES = {
    # torch.compile's max-autotune alone; again (the FX graph cache hits: a warm start); again
    # without the FX graph cache, alone and after another compile in the process
    "A": ("tuned", "tuned", "tuned_nofx", "default_then_tuned_nofx"),
    # cudal1's search first (its max-autotune candidate on the ATen graph), then the user's graph
    "B": ("search", "tuned"),
    # torch.compile's max-autotune first, then the arbiter's build alone, then cudal1's search
    # with the arbiter's max-autotune on (does it benchmark every convolution again?)
    "C": ("tuned", "compile_fx_nofx", "arbiter"),
    # cudal1's search (arbiter off), then the arbiter's build alone: does the search's tuning of
    # the ATen graph carry to the user's graph? (ResNet-18's arbiter has been seen tuning its
    # twelve convolutions again, the convnet's none)
    "D": ("search", "compile_fx"),
    # cudal1's search with the arbiter's max-autotune forced on, alone: does the user's process
    # tune what the search's children tuned (ResNet-18: twelve autotunes have been counted)?
    "E": ("arbiter",),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="default: benchmarks/results/autotune_reuse/<gpu>")
    ap.add_argument("--model", default="convnet", choices=("convnet", "resnet18"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--step-timeout", type=float, default=240)
    ap.add_argument("--only", default="ABC", help="which sequences of steps to run (letters)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--cudal1-cache", help=argparse.SUPPRESS)
    ap.add_argument("--kept", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args)
    recs = []
    for name in args.only:   # each sequence with an inductor cache (and a cudal1 cache) of its own
        ind = Path(tempfile.mkdtemp(prefix="inductor-reuse-"))
        args.cudal1_cache = tempfile.mkdtemp(prefix="cudal1-reuse-")
        seen: set = set()
        for step in SEQUENCES[name]:
            rec, seen = run_step(step, args, ind, seen)
            recs.append(dict(rec, cache=name))
            print(json.dumps(recs[-1]), flush=True)
            if rec["rc"] != 0:   # what follows would measure against a cache it did not fill
                break
    from benchmarks.paths import results_dir
    out = Path(args.out or results_dir("autotune_reuse", args.device))
    out.mkdir(parents=True, exist_ok=True)
    (out / "autotune_reuse.json").write_text(json.dumps(recs, indent=1))
    cols = ["cache", "step", "rc", "first_call_s", "wall_s", "autotune_benchmarks",
            "new_input_keys", "new_choice_hashes_for_known_inputs"]
    lines = [f"model {args.model} bf16, inductor {MODE}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in recs:
        lines.append("| " + " | ".join(
            f"{r.get(c):.1f}" if isinstance(r.get(c), float) else str(r.get(c, "-")) for c in cols) + " |")
    text = "\n".join(lines) + "\n"
    (out / "autotune_reuse.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
