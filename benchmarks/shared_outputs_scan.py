"""Which CUDA-L1 solutions return outputs that share memory across calls (a result kept from one
call to the next), on the CPU: each solution that runs there in plain PyTorch is built beside
its reference, called on two input draws with both outputs kept alive, and their storage ranges
compared (the verifier's ``_shared_memory``); where they overlap, the reference is asked the same.
One child process per solution, with a time limit (the code is an engine's).

    PYTHONPATH=. python3 benchmarks/shared_outputs_scan.py [--data D] [--results R/results.jsonl]

Prints a markdown table of the solutions whose outputs share memory, with the verdict their
latest H200 record gave the replayed solution.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# solutions that build CUDA code or capture CUDA graphs do not run on the CPU
NEEDS_GPU = ("load_inline", "cpp_extension", "triton", "cuda.CUDAGraph", "torch.cuda.graph")


def one(row: dict) -> str:
    """In the child: 'fresh', 'shared: reference too' or 'shared: reference not'."""
    import torch

    sys.path.insert(0, str(ROOT))
    from torch_cudal1.task import load_source
    from torch_cudal1.verify.child import _shared_memory

    ref = load_source(row["ref_code"], "cudal1_scan_ref")
    new = load_source(row["custom_code"], "cudal1_scan_new")   # in this child only
    torch.manual_seed(0)
    init = ref.get_init_inputs()
    with torch.no_grad():
        model, candidate = ref.Model(*init).eval(), new.ModelNew(*init).eval()
        draws = [ref.get_inputs() for _ in range(2)]
        if _shared_memory([candidate(*x) for x in draws]) is None:
            return "fresh"
        shares = _shared_memory([model(*x) for x in draws]) is not None
        return "shared: reference " + ("too" if shares else "not")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT / ".carry/kernelbench/cudal1_h100_dev.jsonl"))
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/kernelbench/h200/results.jsonl"))
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    if args.one:
        print(one(json.loads(sys.stdin.read())))
        return 0
    latest = {}
    for line in Path(args.results).read_text().splitlines():
        r = json.loads(line)
        latest[r["id"]] = r
    counts: dict[str, int] = {}
    shared = []
    for line in Path(args.data).read_text().splitlines():
        row = json.loads(line)
        tid = f"L{row['level_id']}_{row['task_id']}"
        code = row.get("custom_code")
        if not code or any(w in code for w in NEEDS_GPU):
            continue
        try:
            p = subprocess.run([sys.executable, __file__, "--one"], input=json.dumps(row),
                               capture_output=True, text=True, timeout=args.timeout)
            lines = p.stdout.strip().splitlines()
            got = lines[-1] if p.returncode == 0 and lines else "error"
        except subprocess.TimeoutExpired:
            got = "timeout"
        counts[got.split(":")[0]] = counts.get(got.split(":")[0], 0) + 1
        if got.startswith("shared"):
            rc = (latest.get(tid) or {}).get("replay_candidate") or {}
            shared.append((tid, got, rc.get("reason", "-")))
    print(f"Solutions run on the CPU: {sum(counts.values())} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}).\n")
    print("| task | outputs of two calls | replayed on the H200 (latest record) |")
    print("|---|---|---|")
    for tid, got, verdict in shared:
        print(f"| {tid} | {got} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
