"""Run a benchmark script against the package as it was at another git revision, in the same run
(``--against REV``): a temporary git worktree, the script copied in (``REV`` may predate it)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rows_at(rev: str, script: Path, args: list[str]) -> list:
    """The JSON the script prints (run with ``args``) in a worktree of ``rev``."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree),
                        rev], check=True)
        try:
            for helper in (Path(script), Path(__file__)):   # what the script imports from here
                dest = tree / "benchmarks" / helper.name
                shutil.copy(helper, dest)
            copy = tree / "benchmarks" / Path(script).name
            out = subprocess.run([sys.executable, str(copy), *args], cwd=tree,
                                 env={**os.environ, "PYTHONPATH": str(tree)}, check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False)
    return json.loads(out)



def measured(ap, script: Path, measure, argv=None, passed: tuple = ("repeat",)):
    """Parse ``ap`` (given ``--against REV`` here, and the hidden ``--rows-only`` that a
    worktree's run gets). In that run, print ``measure(args)``'s rows and return None; else
    ``(args, [(revision, rows)])``: this tree's rows, at HEAD's revision, then ``REV``'s, its
    run given the options named in ``passed``."""
    import argparse
    ap.add_argument("--against", default="", help="a git revision measured the same way, "
                    "in the same run")
    ap.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rows_only:
        print(json.dumps(measure(args)))
        return None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "this tree"
    runs = [(head, measure(args))]
    if args.against:
        opts = [x for k in passed for x in (f"--{k.replace('_', '-')}", str(getattr(args, k)))]
        runs.append((args.against, rows_at(args.against, script, ["--rows-only", *opts])))
    return args, runs
