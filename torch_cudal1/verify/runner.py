"""Run one candidate in a child process: build, verify, and (if accepted) time it.

The child gets a work directory holding the task, the candidate and a request; it writes
``result.json``. Whatever the candidate does (crash, hang, ``os._exit``), the parent turns it into
a Verdict.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..contracts import Candidate, Timing, Verdict
from ..task import Task

CANDIDATE_FILE = "candidate.py"
REQUEST_FILE = "request.json"
RESULT_FILE = "result.json"
REAL_INPUTS_FILE = "real_inputs.safetensors"


def _write_real_inputs(task: Task, workdir: Path, limit_mb: float) -> bool:
    if not task.real_inputs:
        return False
    import torch
    tensors, total = {}, 0
    for i, v in enumerate(task.real_inputs):
        if isinstance(v, torch.Tensor):
            tensors[f"i{i}"] = v.detach().cpu().contiguous()
            total += v.numel() * v.element_size()
    if total > limit_mb * 2**20:
        return False
    scalars = {f"i{i}": v for i, v in enumerate(task.real_inputs) if not isinstance(v, torch.Tensor)}
    from safetensors.torch import save_file
    save_file(tensors, str(workdir / REAL_INPUTS_FILE),
              metadata={"n": str(len(task.real_inputs)), "scalars": json.dumps(
                  {k: (float(v) if isinstance(v, float) else int(v)) for k, v in scalars.items()})})
    return True


def evaluate(task: Task, candidate: Candidate, *, device: str = "cpu", trials: int = 3,
             timeout_s: float = 300.0, time_it: bool = True, workdir: str | None = None,
             capture_limit_mb: float = 64.0, keep: bool = False,
             extra_env: dict | None = None) -> tuple[Verdict, Timing | None]:
    """Verify ``candidate`` against ``task`` in a child process; time it when accepted."""
    own = workdir is None
    wd = Path(workdir or tempfile.mkdtemp(prefix="cudal1-eval-"))
    wd.mkdir(parents=True, exist_ok=True)
    try:
        task.write(wd)
        (wd / CANDIDATE_FILE).write_text(candidate.source)
        has_real = _write_real_inputs(task, wd, capture_limit_mb)
        (wd / REQUEST_FILE).write_text(json.dumps({
            "device": device, "trials": trials, "time_it": time_it, "real_inputs": has_real}))
        env = dict(os.environ)
        env.update(extra_env or {})
        # Candidates' builds land in the work dir, so they can be kept as cache artefacts.
        env.setdefault("TORCH_EXTENSIONS_DIR", str(wd / "build"))
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).resolve().parents[2])] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        cmd = [sys.executable, "-m", "torch_cudal1.verify.child", str(wd)]
        try:
            proc = subprocess.run(cmd, cwd=str(wd), env=env, capture_output=True, text=True,
                                  timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Verdict.reject("timeout", f"no result within {timeout_s:.0f} s"), None
        result_path = wd / RESULT_FILE
        if not result_path.exists():
            tail = (proc.stderr or proc.stdout or "")[-1500:].strip()
            return Verdict.reject("crash", f"child exited with code {proc.returncode} and no "
                                           f"result: {tail}"), None
        result = json.loads(result_path.read_text())
        return Verdict.from_json(result["verdict"]), Timing.from_json(result.get("timing"))
    finally:
        if own and not keep:
            shutil.rmtree(wd, ignore_errors=True)
