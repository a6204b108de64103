"""The child process of the verifier: ``python -m torch_cudal1.verify.child WORKDIR``.

Loads the task and the candidate, checks the candidate against the reference on fresh input
draws (and the captured real inputs), then times it. Writes ``result.json``.
"""
from __future__ import annotations

import json
import os
import random
import sys
import traceback
from pathlib import Path

import torch

from ..contracts import Verdict
from ..task import load_source
from .compare import compare
from .runner import CANDIDATE_FILE, REAL_INPUTS_FILE, REQUEST_FILE, RESULT_FILE


def _to(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _clone(xs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _load_real_inputs(wd: Path):
    from safetensors import safe_open
    with safe_open(str(wd / REAL_INPUTS_FILE), "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    scalars = json.loads(meta["scalars"])
    n = int(meta["n"])
    return [tensors[f"i{i}"] if f"i{i}" in tensors else scalars[f"i{i}"] for i in range(n)]


def run(wd: Path) -> dict:
    req = json.loads((wd / REQUEST_FILE).read_text())
    device = req["device"]
    task_mod = load_source((wd / "task.py").read_text(), "cudal1_task", filename=str(wd / "task.py"))
    try:
        cand_mod = load_source((wd / CANDIDATE_FILE).read_text(), "cudal1_candidate",
                               filename=str(wd / CANDIDATE_FILE))
    except Exception as e:  # noqa: BLE001 - any failure of untrusted code is a verdict
        reason = "build_error" if "Error building extension" in str(e) or "ninja" in str(e) else "crash"
        return {"verdict": Verdict.reject(reason, f"{type(e).__name__}: {str(e)[-1500:]}").to_json()}
    if not hasattr(cand_mod, "ModelNew"):
        return {"verdict": Verdict.reject("no_model_new", "candidate defines no ModelNew").to_json()}
    init = task_mod.get_init_inputs()
    seed0 = random.SystemRandom().randrange(2**31)
    torch.manual_seed(seed0)
    ref = task_mod.Model(*init).to(device).eval()
    torch.manual_seed(seed0)
    new = cand_mod.ModelNew(*init).to(device).eval()

    draws = []
    for _ in range(int(req["trials"])):
        torch.manual_seed(random.SystemRandom().randrange(2**31))
        draws.append([_to(x, device) for x in task_mod.get_inputs()])
    if req.get("real_inputs"):
        draws.append([_to(x, device) for x in _load_real_inputs(wd)])
    worst = 0.0
    with torch.no_grad():
        for inputs in draws:
            expected = ref(*_clone(inputs))
            got = new(*_clone(inputs))
            reason, detail, stats = compare(expected, got)
            if reason != "ok":
                return {"verdict": Verdict.reject(reason, detail, **stats).to_json()}
            worst = max(worst, stats.get("rel_error", 0.0))
        verdict = Verdict.ok(f"{len(draws)} input draws match", rel_error=worst, trials=len(draws))
        timing = None
        if req.get("time_it"):
            from ..bench.timing import time_callable
            timing = time_callable(new, draws[: max(1, len(draws))], device).to_json()
    return {"verdict": verdict.to_json(), "timing": timing}


def main() -> None:
    wd = Path(sys.argv[1])
    try:
        result = run(wd)
    except Exception as e:  # noqa: BLE001
        result = {"verdict": Verdict.reject(
            "crash", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}").to_json()}
    tmp = wd / (RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, wd / RESULT_FILE)
    sys.stdout.flush()
    os._exit(0)   # skip interpreter teardown: candidates' threads or atexit hooks cannot hang us


if __name__ == "__main__":
    main()
