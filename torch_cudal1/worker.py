"""The background search worker of ``mode="async"``: ``python -m torch_cudal1.worker JOBDIR``.

The serving process renders the graph as a task, writes it with the key fields and options into
a job directory under the cache, and starts this module as a detached process (its own session,
so a Ctrl-C on the server does not kill it and a finished search still lands in the cache when
the server is gone). The worker takes the key's lock, searches unless another process already
cached the key, and writes the entry. In the serving process one launcher thread runs the jobs
one at a time (searches time kernels: they must not compete with each other) and, when a worker
exits, loads the entry and swaps the winner into the graph runner for later calls.

Job directory: ``task.py`` (+ ``inputs.safetensors``), ``real.safetensors`` (the real inputs,
for the entry's test vectors, when small enough), ``job.json`` ({key, fields, device, options,
task_name, scalars}), and after the run ``worker.log`` and ``result.json``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

SECRETS = ("api_key",)
JOB = "job.json"
RESULT = "result.json"
REAL = "real.safetensors"
LOG = "worker.log"


# -- serving side ----------------------------------------------------------------------------------
def write_job(store, key: str, fields: dict, task, device: str, options, inputs: list) -> Path:
    """Write everything the worker needs into a fresh job directory; return it."""
    jobs = store.root / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    d = jobs / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    task.write(d)
    tensors, scalars = {}, {}
    for i, x in enumerate(inputs):
        if hasattr(x, "detach"):
            tensors[f"input.{i}"] = x.detach().cpu().contiguous()
        else:
            scalars[str(i)] = x if isinstance(x, (bool, int, float)) else int(x)
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if size <= options.capture_limit_mb * 2**20:
        from safetensors.torch import save_file
        save_file(tensors, str(d / REAL))
    opts = dict(dataclasses.asdict(options), mode="search")
    for secret in SECRETS:     # never written to disk: passed to the worker in its environment
        opts.pop(secret, None)
    (d / JOB).write_text(json.dumps({"key": key, "fields": fields, "device": device,
                                     "options": opts, "task_name": task.name,
                                     "n_inputs": len(inputs), "scalars": scalars},
                                    default=str))
    return d


@dataclasses.dataclass
class _Job:
    directory: Path
    on_done: object          # callable(result: dict) run in the launcher thread
    env: dict | None = None  # extra environment of the worker (secrets)


_QUEUE: "queue.Queue[_Job]" = queue.Queue()
_LAUNCHER: threading.Thread | None = None
_LAUNCHER_LOCK = threading.Lock()
_ACTIVE = {"n": 0}
_IDLE = threading.Condition()


def secret_env(options) -> dict:
    """The options that must not be written into a job file, as CUDAL1_* variables."""
    return {f"CUDAL1_{k.upper()}": str(getattr(options, k)) for k in SECRETS
            if getattr(options, k, None)}


def submit(directory: Path, on_done, env: dict | None = None) -> None:
    """Queue a job; the launcher thread runs one worker process at a time."""
    global _LAUNCHER
    with _IDLE:
        _ACTIVE["n"] += 1
    _QUEUE.put(_Job(Path(directory), on_done, env))
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None or not _LAUNCHER.is_alive():
            _LAUNCHER = threading.Thread(target=_launch_loop, name="cudal1-worker-launcher",
                                         daemon=True)
            _LAUNCHER.start()


def wait_background(timeout: float | None = None) -> bool:
    """Block until every queued background search has finished and been swapped in (or failed).
    True when idle, False on timeout. For tests, benchmarks and orderly shutdowns."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with _IDLE:
        while _ACTIVE["n"]:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _IDLE.wait(left)
    return True


def _launch_loop() -> None:
    while True:
        job = _QUEUE.get()
        try:
            result = run_job_process(job.directory, env=job.env)
            job.on_done(result)
        except Exception as e:  # noqa: BLE001 - one job's failure must not stop the others
            from .log import logger
            logger.warning("background search job %s failed: %s", job.directory, e)
        finally:
            with _IDLE:
                _ACTIVE["n"] -= 1
                _IDLE.notify_all()


def run_job_process(directory: Path, timeout: float | None = None, env: dict | None = None) -> dict:
    """Run the worker for ``directory`` as a detached process; wait; return its result."""
    directory = Path(directory)
    with open(directory / LOG, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "torch_cudal1.worker", str(directory)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=_child_env(env))
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return {"status": "running", "pid": proc.pid, "log": str(directory / LOG)}
    try:
        result = json.loads((directory / RESULT).read_text())
    except (OSError, ValueError):
        result = {"status": "failed", "error": f"worker exited with {rc} without a result"}
    result["returncode"] = rc
    result["log"] = str(directory / LOG)
    return result


def _child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ, **(extra or {}))
    # The worker must import this very package, also when it is not installed.
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


# -- worker side -----------------------------------------------------------------------------------
def run_job(directory: Path) -> dict:
    """Search the job's task under the key's lock and store the entry. Returns the result dict."""
    import torch

    from .cache.store import Timeout
    from .runtime import store_for
    from .entry import store_search_result
    from .options import Options
    from .search import run_search
    from .task import Task

    job = json.loads((directory / JOB).read_text())
    secrets = {f"CUDAL1_{k.upper()}": os.environ[f"CUDAL1_{k.upper()}"] for k in SECRETS
               if os.environ.get(f"CUDAL1_{k.upper()}")}
    opts = Options.resolve({k: v for k, v in job["options"].items() if k in Options.keys()},
                           env=secrets)
    key, device = job["key"], job["device"]
    store = store_for(opts)
    t0 = time.monotonic()
    try:
        lock = store.lock(key, timeout=opts.lock_timeout_s)
        lock.acquire()
    except Timeout:
        return {"status": "lock_timeout", "key": key}
    try:
        if store.load(key) is not None:
            return {"status": "exists", "key": key}
        flags = (job.get("fields") or {}).get("flags") or {}
        if flags.get("float32_matmul_precision"):   # the user's precision: the search follows it
            torch.set_float32_matmul_precision(flags["float32_matmul_precision"])
        if "cudnn_tf32" in flags:
            torch.backends.cudnn.allow_tf32 = bool(flags["cudnn_tf32"])
        task = Task.from_file(directory / "task.py")
        task.name = job.get("task_name") or task.name
        real = _real_inputs(directory, job)
        task.real_inputs = real
        result = run_search(task, opts, device, key=key,
                            progress=lambda line: print(line, flush=True))
        try:
            if not result.complete:
                return {"status": "incomplete", "key": key, "reason": result.stop_reason}
            outputs = None
            if real is not None:
                with torch.no_grad():
                    mod = task.load()
                    outputs = mod.Model(*mod.get_init_inputs()).to(device)(
                        *[x.to(device) if hasattr(x, "to") else x for x in real])
            store_search_result(store, key, job["fields"], task, result, device, outputs=outputs,
                                capture_limit_mb=opts.capture_limit_mb)
        finally:
            result.cleanup()
        return {"status": "stored", "key": key, "seconds": round(time.monotonic() - t0, 3),
                "winner": result.winner.candidate.origin}
    finally:
        lock.release()


def _real_inputs(directory: Path, job: dict) -> list | None:
    if not (directory / REAL).exists():
        return None
    from safetensors.torch import load_file
    tensors = load_file(str(directory / REAL))
    out = []
    for i in range(job["n_inputs"]):
        if f"input.{i}" in tensors:
            out.append(tensors[f"input.{i}"])
        elif str(i) in job["scalars"]:
            out.append(job["scalars"][str(i)])
        else:
            return None
    return out


def clean_jobs(store, max_age_s: float = 24 * 3600.0) -> list[Path]:
    """Remove job directories older than ``max_age_s`` (their server is gone or failed)."""
    removed = []
    jobs = store.root / "jobs"
    if not jobs.is_dir():
        return removed
    now = time.time()
    for d in jobs.iterdir():
        try:
            if now - d.stat().st_mtime > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
        except OSError:
            continue
    return removed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m torch_cudal1.worker JOBDIR", file=sys.stderr)
        return 2
    directory = Path(argv[0])
    from .bench.timing_cpus import apply_work_cpus
    note = apply_work_cpus()   # builds and checks off the cores reserved for timings
    if note:
        print(note, file=sys.stderr)
    try:
        result = run_job(directory)
    except Exception as e:  # noqa: BLE001 - reported through result.json and the exit code
        import traceback
        traceback.print_exc()
        result = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
    tmp = directory / (RESULT + ".tmp")
    tmp.write_text(json.dumps(result, default=str))
    os.replace(tmp, directory / RESULT)
    return 0 if result.get("status") in ("stored", "exists") else 1


if __name__ == "__main__":
    sys.exit(main())
