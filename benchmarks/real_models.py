"""Real architectures end to end: eager, inductor (default, reduce-overhead, max-autotune), cudal1.

    PYTHONPATH=. python3 benchmarks/real_models.py [--models resnet18,bert,gpt2:bf16] [--dtypes fp32,bf16]
        [--reduce-overhead] [--max-autotune] [--plain] [--small] [--batch N] [--impl auto|library|plain]
        [--out DIR]

Inference with a server-like batch, random weights built from configs (no downloads). The models
are torchvision's / transformers' modules where those are installed, else the plain-PyTorch copies
of benchmarks/real_archs.py; each record's ``impl`` says which. For cudal1: latency after the
search, the cold search time (first call with an empty cache) and the warm-start time (a fresh
process whose first call finds the cache filled). torch.compile's CUDA-graph modes
(reduce-overhead, max-autotune) are timed in a process of their own, in turns with inductor, and
reported as their ratio to inductor there times inductor here. Writes ``real_models.json`` and
``real_models.md`` under ``--out`` (default ``$OUT`` or benchmarks/results/real_models/<device>), rewritten after every
model so that a run cut short keeps what it measured.
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


MODELS = ("resnet18", "bert", "gpt2")
LIBRARY = {"resnet18": "torchvision", "bert": "transformers", "gpt2": "transformers"}
PLAIN = "plain-torch"


BATCH: int | None = None   # --batch: the batch of every model instead of its default


def sizes(small: bool) -> dict:
    """The architectures' sizes: the real ones (BERT-base / GPT-2 small), or tiny for a CPU smoke
    run; ``BATCH`` (``--batch``) replaces the batch (a latency-bound server's 1, say)."""
    batch = BATCH or (2 if small else 32)
    return {"hidden": 128 if small else 768, "heads": 4 if small else 12,
            "intermediate": 256 if small else 3072,          # BERT; GPT-2's MLP is 4 * hidden
            "image": 64 if small else 224, "image_batch": batch, "batch": batch,
            "seq": 16 if small else 128}


def library_model(name: str, small: bool):
    """The library's module (the reference), or None when the library is not installed."""
    z = sizes(small)
    if name == "resnet18":
        try:
            import torchvision
        except ImportError:
            return None
        return torchvision.models.resnet18(weights=None)
    try:
        import transformers
    except ImportError:
        return None
    if name == "bert":
        cfg = transformers.BertConfig(hidden_size=z["hidden"], num_attention_heads=z["heads"],
                                      intermediate_size=z["intermediate"])
        cfg._attn_implementation = "sdpa"
        return transformers.models.bert.modeling_bert.BertLayer(cfg)
    cfg = transformers.GPT2Config(n_embd=z["hidden"], n_head=z["heads"])
    cfg._attn_implementation = "sdpa"
    return transformers.models.gpt2.modeling_gpt2.GPT2Block(cfg)


def plain_model(name: str, small: bool):
    """The same architecture in plain PyTorch (benchmarks/real_archs.py)."""
    from benchmarks import real_archs
    z = sizes(small)
    if name == "resnet18":
        return real_archs.ResNet18()
    if name == "bert":
        return real_archs.BertLayer(z["hidden"], z["heads"], z["intermediate"])
    return real_archs.GPT2Block(z["hidden"], z["heads"])


def build(name: str, small: bool, device: str, dtype, impl: str = "auto"):
    """(model, example inputs, implementation) for a named architecture, or None when its library
    is missing and ``impl`` is "library". ``impl``: "auto" (the library where installed, else the
    plain-PyTorch copy), "library" or "plain"."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name}")
    torch.manual_seed(0)
    model, impl_name = None, PLAIN
    if impl != "plain":
        model, impl_name = library_model(name, small), LIBRARY[name]
    if model is None:
        if impl == "library":
            return None
        model, impl_name = plain_model(name, small), PLAIN
    z = sizes(small)
    if name == "resnet18":
        inputs = (torch.randn(z["image_batch"], 3, z["image"], z["image"]),)
    else:
        inputs = (torch.randn(z["batch"], z["seq"], z["hidden"]),)

    class First(torch.nn.Module):
        """Return the first output only (transformers blocks return tuples with caches)."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            out = self.m(x)
            return out[0] if isinstance(out, (tuple, list)) else out
    model = First(model).eval().to(device=device, dtype=dtype)
    return model, tuple(x.to(device=device, dtype=dtype) for x in inputs), impl_name


def latency_ms(fn, inputs, device: str, reps: int = 20) -> float:
    """Median wall milliseconds per call (a synchronisation after each); the device to itself
    (the device lock: searches or benchmark runners sharing the GPU wait while this runs)."""
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


def interleaved(fns: dict, inputs, device: str, rounds: int = 5, reps: int = 20) -> dict:
    """{name: [median ms of each round]}: the variants take turns, round after round, so that a
    host that slows down or speeds up during the run (other jobs, clocks) biases none of them."""
    per = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            per[k].append(latency_ms(fn, inputs, device, reps))
    return per


def events_ms(fn, inputs, device: str) -> float:
    """The arbiter's measure (its ``_time``): the harness's timed calls, warm caches."""
    from torch_cudal1.serve import arbiter
    return arbiter._time(fn, list(inputs), device).median_ms


def cudal1_compile(model, options: dict):
    try:
        return torch.compile(model, backend="cudal1", options=options)
    except Exception:  # noqa: BLE001 - not pip-installed: the entry point is missing
        from torch_cudal1.serve.backend import cudal1_backend
        return torch.compile(model, backend=cudal1_backend, options=options)


def first_call_s(compiled, inputs, device: str) -> float:
    t0 = time.perf_counter()
    with torch.no_grad():
        compiled(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def cudal1_options(cache_dir: str, mode: str = "search") -> dict:
    # progress: one line per attempt, stamped with the process's time (``stamp_cudal1_log``)
    return {"cache_dir": cache_dir, "engine": "builtin", "mode": mode, "rounds": 2,
            "time_budget_s": 300.0, "progress": True}


def stamp_cudal1_log() -> None:
    """cudal1's log lines stamped with the milliseconds since this process started: where a
    cold search's time went, read from the log (ResNet-18 bf16's has taken 193 s in one run and
    over 290 s in the next)."""
    import logging
    from torch_cudal1.log import configure, logger
    configure()
    for h in logger.handlers:
        h.setFormatter(logging.Formatter("[cudal1 %(relativeCreated)7.0f ms] %(message)s"))


def child_warm(args) -> int:
    """In a fresh process: the first call against a warm cache, as a user's next process makes
    it (default mode: a hit, and the arbiter's kept decision — an inductor build where it chose
    inductor)."""
    model, inputs, _ = build(args.model, args.small, args.device, DTYPES[args.dtype], args.impl)
    compiled = cudal1_compile(model, cudal1_options(args.cache))
    s = first_call_s(compiled, inputs, args.device)
    out = {"warm_start_s": s, "warm_latency_ms": latency_ms(compiled, inputs, args.device)}
    # cudal1 taking turns with eager and inductor in this fresh process too: a second pairing,
    # free of whatever the search left in the main process (``fresh_ratio``); and with the
    # torch.compile modes asked for, so that they too are paired with cudal1 round by round
    # rather than scaled by their ratio to inductor in another process (whose host may differ:
    # ``modes_host_drift``). They compile after cudal1's first call, from the caches the modes'
    # own process filled.
    fns = {"eager": model, "inductor": torch.compile(model)}
    first_call_s(fns["inductor"], inputs, args.device)
    for flag in (f for f in TREES_MODES if getattr(args, f, False)):
        try:
            fns[flag] = torch.compile(model, mode=TREES_MODES[flag])
            out.setdefault("warm_modes_compile_s", {})[flag] = first_call_s(fns[flag], inputs,
                                                                            args.device)
        except Exception as e:  # noqa: BLE001 - the pairing without this mode still stands
            fns.pop(flag, None)
            out.setdefault("warm_modes_error", {})[flag] = f"{type(e).__name__}: {e}"[:300]
    fns["cudal1"] = compiled
    out["warm_rounds_ms"] = interleaved(fns, inputs, args.device, rounds=args.rounds)
    print(json.dumps(out))
    return 0


TREES_MODES = {"reduce_overhead": "reduce-overhead", "max_autotune": "max-autotune"}


def child_trees(args) -> int:
    """In a process of their own: torch.compile's CUDA-graph modes (cudagraph trees) timed in
    turns with inductor. Kept apart from cudal1's process so each is timed as a user of that mode
    alone gets it (memory pools, caches); that the two can share a process is
    ``benchmarks/cudagraph_coexist.py``'s question (they once faulted together; fixed since)."""
    model, inputs, _ = build(args.model, args.small, args.device, DTYPES[args.dtype], args.impl)
    fns, out = {"inductor": torch.compile(model)}, {"compile_s": {}}
    out["compile_s"]["inductor"] = first_call_s(fns["inductor"], inputs, args.device)
    for flag in args.trees.split(","):
        fns[flag] = torch.compile(model, mode=TREES_MODES[flag])
        out["compile_s"][flag] = first_call_s(fns[flag], inputs, args.device)
    out["rounds_ms"] = interleaved(fns, inputs, args.device, rounds=args.rounds)
    print(json.dumps(out))
    return 0


def trees_in_child(name: str, dtype_name: str, impl: str, args) -> dict:
    """``child_trees`` for the modes asked for: {mode: {ms, vs_inductor, compile_s, rounds_ms}}."""
    modes = [f for f in TREES_MODES if getattr(args, f)]
    if not modes:
        return {}
    cmd = [sys.executable, __file__, "--child-trees", ",".join(modes), "--model", name,
           "--dtype", dtype_name, "--device", args.device, "--rounds", str(args.rounds),
           "--impl", "plain" if impl == PLAIN else "library", "--precision", args.precision] \
        + (["--small"] if args.small else []) + (["--batch", str(args.batch)] if args.batch else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {m: {"error": (p.stderr or p.stdout)[-500:]} for m in modes}
    r = got["rounds_ms"]
    return {m: {"ms": statistics.median(r[m]),
                "vs_inductor": statistics.median(a / b for a, b in zip(r[m], r["inductor"])),
                "compile_s": got["compile_s"][m], "rounds_ms": r[m], "inductor_rounds_ms": r["inductor"]}
            for m in modes}


def run_one(name: str, dtype_name: str, args) -> dict | None:
    built = build(name, args.small, args.device, DTYPES[dtype_name], args.impl)
    if built is None:
        return None
    model, inputs, impl = built
    rec = {"model": name, "impl": impl, "dtype": dtype_name, "batch": int(inputs[0].shape[0]),
           "precision": torch.get_float32_matmul_precision(),
           "cudnn_sdp": torch.backends.cuda.cudnn_sdp_enabled()}
    fns = {"eager": model}
    torch._dynamo.reset()
    fns["inductor"] = torch.compile(model)
    rec["inductor_compile_s"] = first_call_s(fns["inductor"], inputs, args.device)
    # torch.compile's other modes, as documented: both replay CUDA graphs (cudagraph trees); timed
    # in a process of their own against inductor there, reported here scaled to this process
    rec["trees"] = trees_in_child(name, dtype_name, impl, args)
    cache = None
    if not args.skip_cudal1:
        from torch_cudal1.counters import STATS
        cache = tempfile.mkdtemp(prefix="cudal1-real-")
        before = dict(STATS)
        fns["cudal1"] = cudal1_compile(model, cudal1_options(cache))
        rec["cudal1_cold_search_s"] = first_call_s(fns["cudal1"], inputs, args.device)
        # What the arbiter served per graph (winner / eager / inductor) and what it measured.
        rec["arbiter"] = [json.loads(p.read_text()) for p in sorted(Path(cache).rglob("serve/*.json"))]
        rec["served"] = ",".join(a.get("winner_origin") or a["choice"] if a["choice"] == "winner"
                                 else a["choice"] for a in rec["arbiter"]) or "-"
        rec["cudal1_stats"] = {k: v - before.get(k, 0) for k, v in STATS.items()
                               if isinstance(v, int) and v != before.get(k, 0)}
        rec["searches"] = search_attempts(cache)
        if args.plain and args.device.startswith("cuda"):
            # The same cache (a hit): the arbiter decides again without inductor's code replayed
            # as a CUDA graph on offer (the arbiter's first default).
            fns["cudal1_plain"] = cudal1_compile(
                model, dict(cudal1_options(cache), arbitrate_cudagraph="off"))
            rec["cudal1_plain_first_call_s"] = first_call_s(fns["cudal1_plain"], inputs, args.device)
            rec["arbiter_plain"] = [json.loads(p.read_text())
                                    for p in sorted(Path(cache).rglob("serve/*.json"))]
    # All variants measured in this process, after every compile, taking turns.
    rounds = interleaved(fns, inputs, args.device, rounds=args.rounds)
    rec["rounds_ms"] = rounds
    from torch._dynamo.utils import counters   # recompiles or graph breaks show up here
    rec["dynamo_stats"] = {k: dict(v) for k, v in counters.items() if k in ("stats", "graph_break")}
    for k, v in rounds.items():
        rec[f"{k}_ms"] = statistics.median(v)
    for k, t in rec["trees"].items():   # its ratio to inductor there, times inductor here
        if "vs_inductor" in t:
            rec[f"{k}_ms"] = t["vs_inductor"] * rec["inductor_ms"]
    if args.device.startswith("cuda"):
        rec["events_ms"] = {k: events_ms(fn, inputs, args.device) for k, fn in fns.items()}
    if cache is not None:
        cmd = [sys.executable, __file__, "--child-warm", "--model", name, "--dtype", dtype_name,
               "--cache", cache, "--device", args.device, "--rounds", str(args.rounds),
               "--impl", "plain" if impl == PLAIN else "library", "--precision", args.precision] \
            + (["--small"] if args.small else []) + (["--no-cudnn-sdp"] if args.no_cudnn_sdp else []) \
            + (["--batch", str(args.batch)] if args.batch else []) \
            + [f"--{f.replace('_', '-')}" for f in TREES_MODES if getattr(args, f)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            rec.update(json.loads(p.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            rec["warm_error"] = (p.stderr or p.stdout)[-500:]
    torch._dynamo.reset()
    return rec


def search_attempts(cache: str) -> dict:
    """Per cached graph, what its search tried: origin, verdict, median ms and seconds taken
    (where the cold search's time went, and why a candidate did not win)."""
    from torch_cudal1.cache.store import CacheStore
    store, out = CacheStore(cache), {}
    for key in store.keys():
        entry = store.load(key, check=False)
        if entry is None:
            continue
        out[key] = [{"origin": a.get("origin") or a.get("candidate", {}).get("origin"),
                     "reason": (a.get("verdict") or {}).get("reason", a.get("reason")),
                     "ms": (a.get("timing") or {}).get("median_ms"),
                     "seconds": round(a.get("seconds") or 0.0, 1)}
                    for a in entry.meta.get("attempts", [])]
    return out


BASELINES = ("eager", "inductor", "reduce_overhead", "max_autotune")
COLUMNS = ["model", "impl", "dtype", "batch", "eager_ms", "inductor_ms", "reduce_overhead_ms",
           "max_autotune_ms", "cudal1_ms", "cudal1_plain_ms", "served", "cudal1_cold_search_s",
           "warm_start_s", "warm_latency_ms"]


def paired_ratio(rec: dict, variant: str = "cudal1") -> float | None:
    """``variant`` (cudal1, or another cudal1 column) over the fastest baseline measured (eager, inductor, and the other modes where
    asked for), round by round (the rounds were taken in turns, so a host that drifts moves all
    alike), median over the rounds. A mode timed in another process (``trees``) enters each
    round as inductor's time in that round times the mode's median ratio to inductor there."""
    r = rec.get("rounds_ms") or {}
    base = [r[k] for k in BASELINES if k in r]
    if "inductor" in r:
        base += [[t["vs_inductor"] * i for i in r["inductor"]]
                 for t in (rec.get("trees") or {}).values() if "vs_inductor" in t]
    if variant not in r or not base:
        return None
    ratios = sorted(c / min(b) for c, *b in zip(r[variant], *base))
    return ratios[len(ratios) // 2] if ratios else None


def fresh_ratio(rec: dict) -> float | None:
    """``paired_ratio`` from the warm-start process: cudal1 served from the cache, taking turns
    with eager and inductor there, and with torch.compile's CUDA-graph modes where asked for
    (in older records they enter through their ratio to inductor in their own process). Every
    variant then runs in a fresh process, none in the one a search has run in (a search's
    process has timed ResNet-18 fp32's inductor at 2.04 ms against 1.47 in the modes' process,
    which favoured cudal1's main-process ratio; other runs drifted the opposite way)."""
    rounds = rec.get("warm_rounds_ms")
    if not rounds:
        return None
    # modes timed there count as they are, with no scaled copy beside them
    trees = None if any(m in rounds for m in TREES_MODES) else rec.get("trees")
    return paired_ratio({"rounds_ms": rounds, "trees": trees})


DRIFT_LIMIT = 0.10   # beyond this, the modes' process did not see the host this one saw


def modes_host_drift(rec: dict) -> float | None:
    """Inductor's median in the modes' own process over its median here. The modes enter every
    figure scaled by their ratio to inductor there, which holds only where both processes saw
    the same host: inductor is host-bound where CUDA graphs are not, so a host loaded while the
    modes were timed slows inductor alone and makes the modes look faster (ResNet-18 bf16 has
    shown 1.41-2.01 ms there against 1.1-1.3 here, with a build or a killed step's workers on the
    CPUs)."""
    there = [x for t in (rec.get("trees") or {}).values() for x in t.get("inductor_rounds_ms") or []]
    here = (rec.get("rounds_ms") or {}).get("inductor")
    if not there or not here:
        return None
    return statistics.median(there) / statistics.median(here)


def drift_note(recs: list[dict]) -> str:
    """A line under a table whose modes were timed on a host unlike the rest's, else nothing."""
    off = [f"{r['model']} {r['dtype']} ({d:.2f})"
           + ("; its fresh-processes ratio timed them beside cudal1 and stands"
              if any(m in (r.get("warm_rounds_ms") or {}) for m in TREES_MODES) else "")
           for r in recs if (d := modes_host_drift(r)) is not None and abs(d - 1) > DRIFT_LIMIT]
    if not off:
        return ""
    return ("\nNot comparable: torch.compile's modes were timed where inductor ran at a different "
            f"speed than here (more than {DRIFT_LIMIT:.0%} off): " + ", ".join(off)
            + ". Their columns, and the paired ratio against them, need a run on a quiet host.\n")


def markdown(recs: list[dict]) -> str:
    cols = COLUMNS + ["cudal1 / best (paired)", "cudal1 / best (fresh processes)",
                      "modes' inductor / here"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in recs:
        r = dict(r, **{"cudal1 / best (paired)": paired_ratio(r),
                       "cudal1 / best (fresh processes)": fresh_ratio(r),
                       "modes' inductor / here": modes_host_drift(r)})
        lines.append("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, "-"))
                                       for c in cols) + " |")
    return "\n".join(lines) + "\n" + drift_note(recs)


def _write_atomic(path: Path, text: str) -> None:
    """Write-then-rename: a run killed mid-write (a time limit) leaves the previous complete file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_results(out: Path, recs: list[dict]) -> None:
    _write_atomic(out / "real_models.json", json.dumps(recs, indent=1))
    _write_atomic(out / "real_models.md", markdown(recs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--max-autotune", action="store_true",
                    help='also torch.compile(mode="max-autotune") (autotuned kernels, CUDA graphs), '
                         'timed in a process of its own with inductor')
    ap.add_argument("--reduce-overhead", action="store_true",
                    help='also torch.compile(mode="reduce-overhead") (inductor with CUDA graphs), '
                         'timed in a process of its own with inductor')
    ap.add_argument("--skip-cudal1", action="store_true")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved latency rounds per variant")
    ap.add_argument("--plain", action="store_true",
                    help="also cudal1 with arbitrate_cudagraph off (GPU): its own column, cudal1_plain_ms")
    ap.add_argument("--no-cudnn-sdp", action="store_true",
                    help="torch.backends.cuda.enable_cudnn_sdp(False): attention by flash / "
                         "efficient kernels only (pytorch/pytorch#169849: cuDNN attention and streams)")
    ap.add_argument("--precision", choices=("highest", "high", "medium"), default="highest",
                    help="torch.set_float32_matmul_precision for every variant (default: PyTorch's "
                         "own, highest); cudal1 proposes TF32 candidates only below highest")
    ap.add_argument("--small", action="store_true", help="tiny shapes (a CPU smoke run)")
    ap.add_argument("--batch", type=int, help="every model's batch (default 32; 2 with --small)")
    ap.add_argument("--impl", choices=("auto", "library", "plain"), default="auto",
                    help="auto: the library's module where installed, else the plain-PyTorch copy "
                         "(benchmarks/real_archs.py); library: skip a model whose library is missing; "
                         "plain: always the plain-PyTorch copy")
    ap.add_argument("--out", default=os.environ.get("OUT"),
                    help="default: benchmarks/results/real_models/<device>")
    ap.add_argument("--child-warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-trees", dest="trees", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    global BATCH
    BATCH = args.batch
    stamp_cudal1_log()
    torch.set_float32_matmul_precision(args.precision)
    if args.no_cudnn_sdp:
        torch.backends.cuda.enable_cudnn_sdp(False)
    if args.child_warm:
        return child_warm(args)
    if args.trees:
        return child_trees(args)
    if not args.out:
        from benchmarks.paths import results_dir
        args.out = str(results_dir("real_models", args.device))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recs = []
    write_results(out, recs)
    runs = []   # "--models resnet18,gpt2:bf16": every dtype for resnet18, bf16 only for gpt2
    for item in args.models.split(","):
        name, _, only = item.strip().partition(":")
        runs += [(name, dt.strip()) for dt in (only or args.dtypes).split(",")]
    for name, dt in runs:
        rec = run_one(name, dt, args)
        if rec is None:
            print(f"{name}: library not installed, skipped", flush=True)
            continue
        print(json.dumps(rec), flush=True)
        recs.append(rec)
        write_results(out, recs)   # after every model: a run cut by a time limit keeps these
    print(markdown(recs), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
