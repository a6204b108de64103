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
