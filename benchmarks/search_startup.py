"""Cold search time, per attempt, in fresh processes: where a user's first call spends its time
before any candidate is timed (verifier children starting, imports), for one or more checkouts.

    PYTHONPATH=. python3 benchmarks/search_startup.py [--repos /a/checkout,/b/checkout] [--repeat 3]

Each repeat runs every checkout once, in turns (the order alternates), each in a fresh process
with a fresh cudal1 cache and the same inductor cache (warm after the first run, so that
inductor's own compile time does not swamp what differs). Prints a markdown table: per checkout
(commit), the median first call and the median seconds of each attempt of the search; writes it
and a JSON copy under --out.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = textwrap.dedent(r"""
    import json, sys, time
    import torch, torch.nn as nn
    import torch_cudal1  # noqa: F401 - registers the backend
    cfg = json.loads(sys.argv[1])
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256), nn.LayerNorm(256))
    m = m.eval().to(cfg["device"])
    x = torch.randn(cfg["batch"], 64, 256, device=cfg["device"])
    opts = {"cache_dir": cfg["cache"], "engine": "builtin", "baselines": cfg["baselines"],
            "rounds": cfg["rounds"], "progress": False}
    c = torch.compile(m, backend="cudal1", options=opts)
    t0 = time.perf_counter()
    with torch.no_grad():
        c(x)
    if cfg["device"].startswith("cuda"):
        torch.cuda.synchronize()
    print(json.dumps({"first_call_s": time.perf_counter() - t0}))
""")


def commit_of(repo: Path) -> str:
    p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (p.stdout.strip() or "?") + ("+changes" if dirty else "")


def run_once(repo: Path, args, inductor_cache: str) -> dict:
    cfg = {"device": args.device, "batch": args.batch, "baselines": args.baselines,
           "rounds": args.rounds, "cache": tempfile.mkdtemp(prefix="cudal1-startup-")}
    env = dict(os.environ, PYTHONPATH=str(repo), TORCHINDUCTOR_CACHE_DIR=inductor_cache)
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env, text=True,
                       capture_output=True, timeout=args.timeout)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout)[-800:]}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    # what the search tried, read back from its cache entry (the format is the same in both)
    from benchmarks.real_models import search_attempts
    out["attempts_s"] = {a["origin"]: a["seconds"] for attempts in search_attempts(cfg["cache"]).values()
                         for a in attempts}
    return out


def table(results: dict) -> str:
    origins = sorted({o for runs in results.values() for r in runs for o in r.get("attempts_s", {})})
    head = ["checkout", "runs", "first call s"] + [f"{o} s" for o in origins]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, runs in results.items():
        ok = [r for r in runs if "first_call_s" in r]
        cells = [name, str(len(ok)),
                 f"{statistics.median(r['first_call_s'] for r in ok):.2f}" if ok else "-"]
        for o in origins:
            xs = [r["attempts_s"][o] for r in ok if o in r["attempts_s"]]
            cells.append(f"{statistics.median(xs):.1f}" if xs else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", default=str(ROOT), help="comma-separated checkouts to compare")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--baselines", default="eager,inductor")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/search_startup/<device>")
    args = ap.parse_args(argv)
    repos = [Path(r).resolve() for r in args.repos.split(",")]
    names = {r: f"{r.name} ({commit_of(r)})" for r in repos}
    inductor_cache = tempfile.mkdtemp(prefix="inductor-startup-")
    run_once(repos[0], args, inductor_cache)   # fills inductor's cache: not counted
    results: dict = {names[r]: [] for r in repos}
    for i in range(args.repeat):
        for r in (repos if i % 2 == 0 else repos[::-1]):
            res = run_once(r, args, inductor_cache)
            results[names[r]].append(res)
            print(json.dumps({"checkout": names[r], **res}), flush=True)
    md = (f"## cold search in fresh processes ({args.device}, baselines {args.baselines}, "
          f"rounds {args.rounds}, batch {args.batch})\n\n"
          f"`PYTHONPATH=. python3 benchmarks/search_startup.py --repos ... --repeat {args.repeat} "
          f"--device {args.device}`\n\n" + table(results))
    from benchmarks.paths import results_dir
    out = Path(args.out or results_dir("search_startup", args.device))
    out.mkdir(parents=True, exist_ok=True)
    (out / "search_startup.md").write_text(md)
    (out / "search_startup.json").write_text(json.dumps(results, indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
