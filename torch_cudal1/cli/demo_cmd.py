"""``cudal1 demo``: the embedded default job, run twice (search, then cache hit)."""
from __future__ import annotations

import subprocess
import sys


def register(sub) -> None:
    from ._common import add_device, add_parser
    p = add_parser(sub, "demo", __doc__,
                   help="compile an embedded model with backend='cudal1' twice: the first process "
                        "searches, the second hits the cache")
    add_device(p)
    p.add_argument("--once", action="store_true", help="run only one process")
    p.set_defaults(func=run)


def run(args) -> int:
    import os

    from ._common import resolve_device, resolve_options
    device = resolve_device(args.device)
    opts = resolve_options(args=args)
    cmd = [sys.executable, "-m", "torch_cudal1.examples.quickstart", "--device", device]
    env = dict(os.environ, CUDAL1_CACHE_DIR=str(opts.cache_path))
    runs = 1 if args.once else 2
    for i in range(runs):
        print(f"== process {i + 1} of {runs}: torch.compile(model, backend='cudal1') ==", flush=True)
        rc = subprocess.call(cmd, env=env)
        if rc != 0:
            return rc
    return 0
