"""Where the AOTInductor candidate fails on a GPU: each step in its own process, printed.

    PYTHONPATH=. python3 benchmarks/aoti_diag.py [--device cuda] [--out DIR]

Steps, on a small task (Linear + ReLU): export, compile to a package, load it, serve the module's
own weights (load_constants, user-managed), run; then the whole candidate through the verifier
(fresh child, then forked). Each step runs in a fresh interpreter with faulthandler on, so a
crash names its step and leaves a Python stack. Writes ``aoti_diag.json`` under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STEP = textwrap.dedent(r"""
    import faulthandler, json, os, sys, time
    faulthandler.enable()
    import torch
    device, work, upto = sys.argv[1], sys.argv[2], sys.argv[3]
    steps = ["export", "compile", "load", "load_constants", "run"]
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(96, 80), torch.nn.ReLU()).eval().to(device)
    x = torch.randn(32, 96, device=device)
    path = work + "/m.pt2"
    out = {}
    t0 = time.time()
    with torch.no_grad():
        ep = torch.export.export(m, (x,), strict=False)
        out["export_s"] = time.time() - t0
        if upto != "export" and not os.path.exists(path):   # later steps reuse the package
            torch._inductor.aoti_compile_and_package(ep, package_path=path)
            out["compile_s"] = time.time() - t0
        if steps.index(upto) >= 2:
            idx = torch.device(device).index if device.startswith("cuda") else -1
            pkg = torch._inductor.aoti_load_package(path, device_index=-1 if idx is None else idx)
            out["fqns"] = pkg.get_constant_fqns()
        if steps.index(upto) == 4:   # run with the package's own weights
            got = pkg(x)
            torch.cuda.synchronize() if device.startswith("cuda") else None
            out["max_err_baked"] = float((got - m(x)).abs().max())
        if upto == "load_constants":
            state = m.state_dict(keep_vars=True)
            pkg.load_constants({k: state[k] for k in pkg.get_constant_fqns() if k in state},
                               check_full_update=False, user_managed=True)
            got = pkg(x)
            torch.cuda.synchronize() if device.startswith("cuda") else None
            out["max_err_user_managed"] = float((got - m(x)).abs().max())
    print(json.dumps(out))
""")

VERIFY = textwrap.dedent(r"""
    import faulthandler, json, os, sys
    faulthandler.enable()
    from pathlib import Path
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.engines.builtin import aoti
    from torch_cudal1.task import Task
    from torch_cudal1.verify import evaluate
    task = Task.from_file(Path("tests/adversarial/tasks/linear_act.py"))
    cand = Candidate(aoti.wrap(baseline_candidate(task, "eager").source), "builtin:aoti")
    v, t = evaluate(task, cand, device=sys.argv[1], trials=2, timeout_s=400,
                    build_cache_dir=sys.argv[2])
    print(json.dumps({"verdict": v.reason, "detail": v.detail[-1500:],
                      "ms": t.median_ms if t else None}))
""")


def _run(code: str, args: list[str], env: dict, timeout: float) -> dict:
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           timeout=timeout, cwd=str(ROOT), env=full)
    except subprocess.TimeoutExpired:
        return {"rc": "timeout"}
    rec = {"rc": p.returncode}
    try:
        rec.update(json.loads(p.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        rec["stderr"] = p.stderr[-2500:]
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="default: benchmarks/results/aoti_diag/<gpu>")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cudal1-aoti-diag-")
    res = {}
    for upto in ("export", "compile", "run", "load_constants"):
        res[upto] = _run(STEP, [args.device, work, upto], {}, 300)
        print(upto, json.dumps(res[upto])[:600], flush=True)
    for mode in ("0", "1"):
        key = f"verifier_forkserver_{mode}"
        res[key] = _run(VERIFY, [args.device, tempfile.mkdtemp(prefix="cudal1-aoti-b-")],
                        {"CUDAL1_VERIFY_FORKSERVER": mode}, 450)
        print(key, json.dumps(res[key])[:1600], flush=True)
    from benchmarks.paths import results_dir
    out = Path(args.out or results_dir("aoti_diag", args.device))
    out.mkdir(parents=True, exist_ok=True)
    (out / "aoti_diag.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
