"""Peak host memory of one verification, run in this process on the CPU, and where it peaked.

    PYTHONPATH=. python3 benchmarks/verify_memory.py TASK.py CANDIDATE.py [--piece N] [--keep-bytes B]

The verifier's child (``verify/child.py``) runs in-process here, with a thread sampling the
resident set every 2 ms; prints the peak above the start and the harness's frames at it.
``--piece`` sets how many elements the comparison takes at a time (``verify/compare.py``:
``PIECE``; a value above the output's size compares it whole), ``--keep-bytes`` the budget for
kept answers (1: answers recomputed, as for outputs too large to keep on the device). On a CPU
the outputs, snapshots and references share one memory, so the figure is an upper bound of what
a GPU run puts on the device.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task")
    ap.add_argument("candidate")
    ap.add_argument("--piece", type=int)
    ap.add_argument("--keep-bytes", type=int)
    args = ap.parse_args()
    if args.keep_bytes:
        os.environ["CUDAL1_VERIFY_KEEP_BYTES"] = str(args.keep_bytes)
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.task import Task
    from torch_cudal1.verify import child, compare
    from torch_cudal1.verify.runner import REQUEST_FILE, evaluate
    if args.piece:
        compare.PIECE = args.piece
    task = Task.from_file(args.task)
    wd = Path(tempfile.mkdtemp(prefix="cudal1-verify-memory-"))
    # the runner writes the work dir (task, candidate, request); its child is not needed here
    evaluate(task, Candidate(Path(args.candidate).read_text(), "file:" + args.candidate),
             device="cpu", time_it=False, workdir=str(wd), keep=True, memory_limit_mb=None,
             timeout_s=0.01)
    req = json.loads((wd / REQUEST_FILE).read_text())
    page = os.sysconf("SC_PAGE_SIZE")
    rss = lambda: int(Path("/proc/self/statm").read_text().split()[1]) * page  # noqa: E731
    main_id, base, peak = threading.main_thread().ident, rss(), [0, []]

    def sample():
        while True:
            now = rss() - base
            if now > peak[0]:
                stack = traceback.extract_stack(sys._current_frames()[main_id])
                peak[:] = [now, [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in stack
                                 if "torch_cudal1" in f.filename][-4:]]
            time.sleep(0.002)
    threading.Thread(target=sample, daemon=True).start()
    child._write_result = lambda *a, **k: None   # the nonce handshake is the runner's, not ours
    result = child.Harness(wd, req).run()
    time.sleep(0.05)
    print(f"verdict: {result['verdict']['reason']} ({result['verdict'].get('stats', {}).get('references', '-')} answers)")
    print(f"peak resident memory above the start: {peak[0] / 2**20:.0f} MiB, at: {' > '.join(peak[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
