"""Checking an entry's stored test vectors (``vectors.safetensors``: the real inputs of the call
that made the entry and the reference outputs) against its winner, in a child process.

``python -m torch_cudal1.cache.vectors ENTRY_DIR DEVICE`` loads the winner exactly as serving
does (prebuilt artefacts, no compiler), runs it on the stored inputs and compares with the stored
outputs (``verify.compare`` tolerances). It prints one JSON line: {"status": "ok" | "mismatch" |
"error", "detail"}. Cached code runs in that child, never in the calling process.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .store import VECTORS


def check_vectors(entry_dir: str | Path, device: str, timeout_s: float = 600.0) -> dict:
    """{"status": ok | absent | mismatch | error | timeout, "detail"}."""
    entry_dir = Path(entry_dir)
    if not (entry_dir / VECTORS).exists():
        return {"status": "absent", "detail": "no test vectors stored (inputs above capture_limit_mb)"}
    from ..worker import _child_env
    try:
        proc = subprocess.run([sys.executable, "-m", "torch_cudal1.cache.vectors", str(entry_dir), device],
                              capture_output=True, text=True, timeout=timeout_s, env=_child_env(),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "detail": f"no answer within {timeout_s:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return {"status": "error", "detail": f"child exited with {proc.returncode}: {' | '.join(tail)}"}
    return json.loads(lines[-1])


def _run(entry_dir: Path, device: str) -> dict:
    import torch
    from safetensors.torch import load_file

    from ..runtime import instantiate
    from ..verify.compare import compare
    from .store import WINNER

    vec = load_file(str(entry_dir / VECTORS))
    inputs = [vec[f"input.{i}"].to(device) for i in range(len(vec)) if f"input.{i}" in vec]
    outputs = [vec[f"output.{i}"].to(device) for i in range(len(vec)) if f"output.{i}" in vec]
    if not outputs:
        return {"status": "absent", "detail": "no outputs stored"}
    meta = json.loads((entry_dir / "meta.json").read_text())
    want = len(meta.get("fields", {}).get("inputs", []))
    if len(inputs) != want:
        # Non-tensor arguments (symbolic sizes) are not stored; take them from the key fields.
        inputs = _with_scalars(meta["fields"]["inputs"], vec, device)
    forward = instantiate((entry_dir / WINNER).read_text(), entry_dir, device, "cudal1_vectors_check")
    with torch.no_grad():
        got = forward(*inputs)
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    reason, detail, _ = compare(outputs, got)
    return {"status": "ok" if reason == "ok" else "mismatch", "reason": reason, "detail": detail}


def _with_scalars(specs: list, vec: dict, device: str) -> list:
    out = []
    for i, spec in enumerate(specs):
        if f"input.{i}" in vec:
            out.append(vec[f"input.{i}"].to(device))
        elif spec.get("scalar") == "int":
            out.append(int(spec["value"]))
        elif spec.get("scalar") == "float":
            out.append(float(spec["value"]))
        elif spec.get("scalar") == "bool":
            out.append(spec["value"] == "True")
        else:
            raise ValueError(f"input {i} ({spec}) cannot be rebuilt from the entry")
    return out


def main(argv: list[str]) -> int:
    try:
        result = _run(Path(argv[0]), argv[1])
    except Exception as e:  # noqa: BLE001 - reported as a result line
        result = {"status": "error", "detail": f"{type(e).__name__}: {str(e)[:400]}"}
    print(json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
