"""``cudal1 demo``: the embedded default job, run twice (search, then cache hit)."""
from __future__ import annotations

import subprocess
import sys


def register(sub) -> None:
    p = sub.add_parser("demo", help="compile an embedded model with backend='cudal1' twice: "
                                    "the first process searches, the second hits the cache")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--once", action="store_true", help="run only one process")
    p.set_defaults(func=run)


def run(args) -> int:
    cmd = [sys.executable, "-m", "torch_cudal1.examples.quickstart"]
    if args.device:
        cmd += ["--device", args.device]
    runs = 1 if args.once else 2
    for i in range(runs):
        print(f"== process {i + 1} of {runs}: torch.compile(model, backend='cudal1') ==", flush=True)
        rc = subprocess.call(cmd)
        if rc != 0:
            return rc
    return 0
