"""Running an entry's winner, exactly as serving loads it, on given inputs, in a child process.

An entry stores test vectors (``vectors.safetensors``: the real inputs of the call that made it
and the reference's outputs). ``run_winner`` hands cases of inputs to a child
(``python -m torch_cudal1.cache.vectors WORKDIR``) that loads the winner as serving does (its
prebuilt artefacts, no compiler for extensions) and gives back the outputs. The child runs where
the verifier runs candidates: inside the OS sandbox (``verify.os_sandbox``: bubblewrap, no
network, writes only to its work dir, scrubbed environment, private compiler caches), under the
harness's audit hook and memory limit, in its own group, killed with its parent. The judging
stays here: ``check_vectors`` compares the outputs with the expected ones in this process, which
never imports the entry's code.

Files of one run in WORKDIR: ``request.json`` ({entry, device, cases, inductor_cache}), one
``inputs.K.safetensors`` per case, and from the child ``outputs.K.safetensors`` and
``result.json`` (carrying a nonce the child read from its
stdin before loading the winner, so that the winner cannot forge a result).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from .store import VECTORS

REQUEST = "request.json"
INPUTS = "inputs.{}.safetensors"
OUTPUTS = "outputs.{}.safetensors"
RESULT = "result.json"
CPU_MEMORY_LIMIT_MB = 32768.0


class WinnerRunError(Exception):
    """The child gave no outputs (crash, timeout, a forbidden call, an exception)."""


# -- stored vectors (data only: safetensors never runs code) ---------------------------------------
class VectorsUnfit(ValueError):
    """Stored test inputs that are not inputs of the entry's key (their count, dtypes or sizes)."""


def stored_vectors(entry_dir: str | Path, device: str = "cpu", *,
                   max_bytes: int | None = None) -> tuple[list, list] | None:
    """(inputs, outputs) stored with the entry, or None when it has none, or a file larger than
    ``max_bytes`` (not read). Non-tensor inputs (symbolic sizes) come from the key fields.
    VectorsUnfit when the stored inputs do not fit the key's input specs: test inputs of another
    shape (an empty batch, say) say nothing of the calls the key serves."""
    import torch  # noqa: F401
    from safetensors.torch import load_file
    entry_dir = Path(entry_dir)
    path = entry_dir / VECTORS
    if not path.exists() or (max_bytes is not None and path.stat().st_size > max_bytes):
        return None
    vec = load_file(str(path))
    outputs = [vec[f"output.{i}"].to(device) for i in range(len(vec)) if f"output.{i}" in vec]
    if not outputs:
        return None
    inputs = [vec[f"input.{i}"].to(device) for i in range(len(vec)) if f"input.{i}" in vec]
    meta = json.loads((entry_dir / "meta.json").read_text())
    specs = (meta.get("fields") or {}).get("inputs") or []
    if len(inputs) != len(specs):
        inputs = _with_scalars(specs, vec, device)
    _fit(inputs, specs)
    return inputs, outputs


def _fit(inputs: list, specs: list) -> None:
    import torch
    if len(inputs) != len(specs):
        raise VectorsUnfit(f"{len(inputs)} stored inputs, the key has {len(specs)}")
    for i, (x, spec) in enumerate(zip(inputs, specs)):
        if not isinstance(x, torch.Tensor):
            continue
        shape = spec.get("shape")
        if spec.get("dtype") != str(x.dtype) or not isinstance(shape, list):
            raise VectorsUnfit(f"stored input {i} is {x.dtype}, the key's is {spec.get('dtype')}")
        # a size the key holds as a number must be the stored one; a symbolic one may vary
        if len(shape) != x.dim() or any(isinstance(want, int) and want != got
                                        for want, got in zip(shape, x.shape)):
            raise VectorsUnfit(f"stored input {i} has shape {list(x.shape)}, the key's is {shape}")


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


# -- the parent side ---------------------------------------------------------------------------------
def _write_inputs(path: Path, inputs: list) -> None:
    import torch

    from ..tensor_files import save_tensors
    tensors, scalars = {}, {}
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            tensors[f"input.{i}"] = x
        elif isinstance(x, (bool, int, float)):
            scalars[str(i)] = x
        else:
            raise ValueError(f"input {i} of type {type(x).__name__} cannot be handed to a child")
    save_tensors(tensors, str(path), metadata={"n": str(len(inputs)), "scalars": json.dumps(scalars)})


def run_winner(entry_dir: str | Path, device: str, cases: list[list], *,
               timeout_s: float = 600.0, inductor_cache: bool = True) -> list[list]:
    """The outputs of ``entry_dir``'s winner on each case of inputs in ``cases`` (on ``device``),
    computed in one child process, loaded as serving loads it (``inductor_cache``: with the
    entry's inductor artefacts). Raises WinnerRunError when it gives none."""
    from safetensors.torch import load_file

    from ..verify import os_sandbox, sandbox_files
    from ..verify.process import child_limits
    from ..verify.runner import child_env
    wd = Path(tempfile.mkdtemp(prefix="cudal1-winner-run-"))
    try:
        (wd / REQUEST).write_text(json.dumps({"entry": str(Path(entry_dir).resolve()),
                                              "device": device, "cases": len(cases),
                                              "inductor_cache": bool(inductor_cache)}))
        for k, inputs in enumerate(cases):
            _write_inputs(wd / INPUTS.format(k), inputs)
        memory = None if str(device).startswith("cuda") else CPU_MEMORY_LIMIT_MB
        # Code nobody here checked yet: compiler caches of its own, thrown away with the run.
        private = {"TMPDIR": wd / "tmp", "TORCHINDUCTOR_CACHE_DIR": wd / "inductor",
                   "TRITON_CACHE_DIR": wd / "triton", "TORCH_EXTENSIONS_DIR": wd / "extensions",
                   "CUDA_CACHE_PATH": wd / "nv"}
        for d in private.values():
            d.mkdir()
        env = os_sandbox.scrubbed_env(child_env())
        env.update({k: str(v) for k, v in private.items()}, PYTHONDONTWRITEBYTECODE="1")
        argv = [sys.executable, "-m", "torch_cudal1.cache.vectors", str(wd)]
        if os_sandbox.active():
            argv = os_sandbox.wrap(argv, chdir=str(wd), writable=[str(wd)],
                                   gpu=str(device).startswith("cuda"),
                                   readable=[str(Path(entry_dir).resolve())])
        elif os_sandbox.required():
            raise WinnerRunError("CUDAL1_SANDBOX=bwrap, but " + (os_sandbox.check() or "it is off"))
        nonce = os.urandom(16).hex()
        # read back through this file object: the child may put a link in the log's place
        with open(wd / "child.log", "w+b") as log:
            proc = subprocess.Popen(argv, cwd=str(wd), env=env, stdin=subprocess.PIPE,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    preexec_fn=child_limits(memory))
            try:
                proc.stdin.write((nonce + "\n").encode())
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise WinnerRunError(f"no answer within {timeout_s:.0f} s") from None
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
            try:
                result = json.loads(sandbox_files.read_text(wd / RESULT))
            except (OSError, ValueError):
                tail = sandbox_files.tail(log.fileno(), 4000).splitlines()[-3:]
                raise WinnerRunError(f"child exited with {proc.returncode} and no result: "
                                     f"{' | '.join(tail)}") from None
        if result.get("nonce") != nonce:
            raise WinnerRunError("result.json was not written by the harness")
        if result.get("status") != "ok":
            raise WinnerRunError(str(result.get("detail"))[:400])
        outs = []
        for k, n in enumerate(result["n_outputs"][:len(cases)]):
            path = wd / OUTPUTS.format(k)
            # the child's processes are gone: what is there now stays
            if not sandbox_files.is_regular(path):
                raise WinnerRunError(f"{path.name} is missing or not a regular file")
            got = load_file(str(path))
            outs.append([got[f"output.{i}"].to(device) for i in range(int(n))])
        if len(outs) != len(cases):
            raise WinnerRunError(f"outputs for {len(outs)} of {len(cases)} cases")
        return outs
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def compare_outputs(expected: list, got: list) -> tuple[str, str]:
    """(reason, detail): "ok" when ``got`` matches ``expected`` within the verifier's tolerances."""
    from ..verify.compare import compare
    if len(expected) != len(got):
        return "mismatch", f"{len(got)} outputs, expected {len(expected)}"
    reason, detail, _ = compare(expected, got)
    return reason, detail


def check_vectors(entry_dir: str | Path, device: str, timeout_s: float = 600.0,
                  inductor_cache: bool = True) -> dict:
    """The winner against its own stored vectors: {"status": ok | absent | mismatch | error,
    "reason", "detail"}."""
    try:
        vec = stored_vectors(entry_dir, device)
    except Exception as e:  # noqa: BLE001 - an unreadable vectors file is a failed check
        return {"status": "error", "detail": f"unreadable test vectors ({type(e).__name__}: {e})"}
    if vec is None:
        return {"status": "absent", "detail": "no test vectors stored (inputs above capture_limit_mb)"}
    inputs, outputs = vec
    try:
        (got,) = run_winner(entry_dir, device, [inputs], timeout_s=timeout_s,
                            inductor_cache=inductor_cache)
    except WinnerRunError as e:
        return {"status": "error", "detail": str(e)}
    reason, detail = compare_outputs(outputs, got)
    return {"status": "ok" if reason == "ok" else "mismatch", "reason": reason, "detail": detail}


# -- the child side ----------------------------------------------------------------------------------
def _child(wd: Path) -> dict:
    nonce = sys.stdin.readline().strip()     # before any of the entry's code is loaded
    req = json.loads((wd / REQUEST).read_text())

    def write(result: dict) -> None:
        tmp = wd / (RESULT + ".tmp")
        tmp.write_text(json.dumps(dict(result, nonce=nonce), default=str))
        os.replace(tmp, wd / RESULT)

    def violation(detail: str) -> None:
        write({"status": "error", "detail": f"forbidden call: {detail}"})
        os._exit(0)

    try:
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file

        from ..harness import audit
        from ..tensor_files import save_tensors   # bound before the winner's code runs
        from .winner import instantiate
        from .store import WINNER
        device = req["device"]
        entry = Path(req["entry"])
        cases = []
        for k in range(int(req["cases"])):
            with safe_open(str(wd / INPUTS.format(k)), "pt") as f:
                meta = f.metadata() or {}
            tensors = load_file(str(wd / INPUTS.format(k)))
            scalars = json.loads(meta.get("scalars") or "{}")
            cases.append([tensors[f"input.{i}"].to(device) if f"input.{i}" in tensors
                          else scalars[str(i)] for i in range(int(meta.get("n", len(tensors))))])
        audit.install([str(wd)], violation, shared=False)
        forward = instantiate((entry / WINNER).read_text(), entry, device, "cudal1_winner_run",
                              inductor_cache=bool(req.get("inductor_cache", True)))
        counts = []
        for k, inputs in enumerate(cases):
            with torch.no_grad():
                out = forward(*inputs)
            outs = [out] if isinstance(out, torch.Tensor) else list(out)
            if not all(isinstance(o, torch.Tensor) for o in outs):
                return write({"status": "error",
                              "detail": "the winner returned a non-tensor output"})
            # written before the next call: a buffer the winner reuses cannot answer twice
            save_tensors({f"output.{i}": o for i, o in enumerate(outs)},
                         str(wd / OUTPUTS.format(k)))
            counts.append(len(outs))
        write({"status": "ok", "n_outputs": counts})
    except Exception as e:  # noqa: BLE001 - reported as a result
        write({"status": "error", "detail": f"{type(e).__name__}: {str(e)[:400]}"})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m torch_cudal1.cache.vectors WORKDIR", file=sys.stderr)
        return 2
    _child(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
