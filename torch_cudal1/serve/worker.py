"""The background search worker of ``mode="async"``: ``python -m torch_cudal1.serve.worker JOBDIR``.

The serving process renders the graph as a task, writes it with the key fields and options into
a job directory under the cache, and starts this module as a detached process (its own process
group without the terminal, ``verify.process.own_group``, so a Ctrl-C or a closed terminal does
not kill it and a finished search still lands in the cache when the server is gone; in the
server's session, so that while it searches the server's own torch threads share the CPUs with
it thread by thread, not session against session). The worker takes the key's lock, searches
unless another process already cached the key, and writes the entry. In the serving process one
launcher thread runs the jobs one at a time (searches time kernels: they must not compete with
each other) and, when a worker exits, loads the entry and swaps the winner into the graph runner
for later calls.

Job directory: ``task.py`` (+ ``inputs.safetensors``), ``real.safetensors`` (the real inputs,
for the entry's test vectors, when small enough), ``job.json`` ({key, fields, device, options,
task_name, scalars, server_pid}), and after the run ``worker.log`` and ``result.json``. It is
private to the user (0700: it holds the user's real inputs) and holds no secret: options such as
``api_key`` or ``remote_secret`` reach the worker in its environment only. The launcher removes
it when the worker exits, whatever the outcome (a failed search's log is kept under
``<cache>/logs/``); a worker whose server is gone removes it itself.
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

from ..verify.process import own_group

JOB = "job.json"
RESULT = "result.json"
REAL = "real.safetensors"
LOG = "worker.log"


# -- serving side ----------------------------------------------------------------------------------
def write_job(store, key: str, fields: dict, task, device: str, options, inputs: list) -> Path:
    """Write everything the worker needs into a fresh job directory; return it."""
    jobs = store.root / "jobs"
    _private_dir(jobs)
    d = jobs / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    _private_dir(d)
    task.write(d)
    scalars = {str(i): x if isinstance(x, (bool, int, float)) else int(x)
               for i, x in enumerate(inputs) if not hasattr(x, "detach")}
    from ..harness import real_inputs   # with their strides: the graph's views may need them
    real_inputs.save([x.detach() if hasattr(x, "detach") else scalars[str(i)]
                      for i, x in enumerate(inputs)], str(d / REAL),
                     int(options.capture_limit_mb * 2**20))
    opts = dict(dataclasses.asdict(options), mode="search")
    for secret in options.secret_keys():  # never written to disk: passed to the worker in its environment
        opts.pop(secret, None)
    # Which inputs are parameters, and which need grad: the worker's copies are the same kind, so
    # that what inductor builds there (keyed by them) is what the serving process looks up.
    grads = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    params = [i for i, x in enumerate(inputs) if isinstance(x, _parameter_type())]
    (d / JOB).write_text(json.dumps({"key": key, "fields": fields, "device": device,
                                     "options": opts, "task_name": task.name,
                                     "n_inputs": len(inputs), "scalars": scalars,
                                     "requires_grad": grads, "parameters": params,
                                     "server_pid": os.getpid()},
                                    default=str))
    return d


def _parameter_type():
    import torch
    return torch.nn.Parameter


def _private_dir(d: Path) -> None:
    """``d`` (and missing parents) created, and ``d`` itself readable by this user only."""
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)     # mkdir's mode is masked by the umask, and the dir may exist already


@dataclasses.dataclass
class _Job:
    directory: Path
    on_done: object          # callable(result: dict) run in the launcher thread
    env: dict | None = None  # extra environment of the worker (secrets)
    log_dir: Path | None = None   # where a failed job's log is kept once its dir is removed


_QUEUE: "queue.Queue[_Job]" = queue.Queue()
_LAUNCHER: threading.Thread | None = None
_LAUNCHER_LOCK = threading.Lock()
_ACTIVE = {"n": 0}
_IDLE = threading.Condition()


def submit(directory: Path, on_done, env: dict | None = None,
           log_dir: str | os.PathLike | None = None) -> None:
    """Queue a job; the launcher thread runs one worker process at a time. When it exits, its
    directory is removed (a failed job's ``worker.log`` moves to ``log_dir`` first) and
    ``on_done(result)`` runs; ``result["log"]`` names the kept log."""
    global _LAUNCHER
    with _IDLE:
        _ACTIVE["n"] += 1
    _QUEUE.put(_Job(Path(directory), on_done, env, Path(log_dir) if log_dir else None))
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
            result = retire(job.directory, run_job_process(job.directory, env=job.env),
                            job.log_dir)
            job.on_done(result)
        except Exception as e:  # noqa: BLE001 - one job's failure must not stop the others
            from ..log import logger
            logger.warning("background search job %s failed: %s", job.directory, e)
        finally:
            with _IDLE:
                _ACTIVE["n"] -= 1
                _IDLE.notify_all()


def run_job_process(directory: Path, timeout: float | None = None, env: dict | None = None) -> dict:
    """Run the worker for ``directory`` as a detached process; wait; return its result."""
    directory = Path(directory)
    with open(directory / LOG, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "torch_cudal1.serve.worker", str(directory)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=own_group, env=_child_env(env))
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


def retire(directory: Path, result: dict, log_dir: Path | None = None) -> dict:
    """Remove a finished job's directory (it holds the user's real inputs). A job that did not
    store an entry keeps its log: moved to ``log_dir/<job>.log``, named in ``result["log"]``."""
    directory = Path(directory)
    log = directory / LOG
    if result.get("status") not in ("stored", "exists") and log_dir is not None and log.exists():
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            kept = log_dir / f"{directory.name}.log"
            shutil.move(str(log), kept)
            result = dict(result, log=str(kept))
        except OSError:
            pass
    elif result.get("status") in ("stored", "exists"):
        result = dict(result, log=None)
    shutil.rmtree(directory, ignore_errors=True)
    return result


def _child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ, **(extra or {}))
    # The worker must import this very package, also when it is not installed.
    root = str(Path(__file__).resolve().parents[2])   # the directory holding torch_cudal1/
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


# -- worker side -----------------------------------------------------------------------------------
def run_job(directory: Path) -> dict:
    """Search the job's task under the key's lock and store the entry (``search_and_store``).
    Returns the result dict."""
    import torch

    from ..cache.tiered import store_for
    from ..options import Options
    from ..search.transaction import HIT, INCOMPLETE, LOCK_TIMEOUT, search_and_store
    from ..task import Task

    job = json.loads((directory / JOB).read_text())
    opts = Options.resolve({k: v for k, v in job["options"].items() if k in Options.keys()},
                           env=Options.secrets_in(os.environ))
    key, device = job["key"], job["device"]
    flags = (job.get("fields") or {}).get("flags") or {}
    # The user's precision: the search follows it. Set only where it differs: setting the
    # default explicitly changes torch's internal state ('ieee' instead of 'none'), which
    # inductor keys its caches on, and the serving process would miss what this one builds.
    want = flags.get("float32_matmul_precision")
    if want and torch.get_float32_matmul_precision() != want:
        torch.set_float32_matmul_precision(want)
    if "cudnn_tf32" in flags and torch.backends.cudnn.allow_tf32 != bool(flags["cudnn_tf32"]):
        torch.backends.cudnn.allow_tf32 = bool(flags["cudnn_tf32"])
    t0 = time.monotonic()

    made: list = []     # the task, once the transaction reads it (a search is due)

    def task():
        t = Task.from_file(directory / "task.py")
        t.name = job.get("task_name") or t.name
        t.real_inputs = _real_inputs(directory, job)
        made.append(t)
        return t

    def outputs():
        real = made[0].real_inputs
        if real is None:
            return None
        with torch.no_grad():
            mod = made[0].load()
            return mod.Model(*mod.get_init_inputs()).to(device)(
                *[x.to(device) if hasattr(x, "to") else x for x in real])

    done = search_and_store(store_for(opts), key, job["fields"], task, opts, device,
                            wait_s=opts.lock_timeout_s, outputs=outputs,
                            progress=lambda line: print(line, flush=True))
    if done.status == LOCK_TIMEOUT:
        return {"status": "lock_timeout", "key": key}
    if done.status == HIT:
        return {"status": "exists", "key": key}
    if done.status == INCOMPLETE:
        return {"status": "incomplete", "key": key, "reason": done.result.stop_reason}
    return {"status": "stored", "key": key, "seconds": round(time.monotonic() - t0, 3),
            "winner": done.result.winner.candidate.origin}


def _real_inputs(directory: Path, job: dict) -> list | None:
    if not (directory / REAL).exists():
        return None
    from ..harness import real_inputs
    values = real_inputs.load(str(directory / REAL))
    grads = set(job.get("requires_grad") or [])
    params = set(job.get("parameters") or [])
    out = []
    for i, t in enumerate(values[: job["n_inputs"]]):
        if hasattr(t, "detach"):
            grad = i in grads and (t.is_floating_point() or t.is_complex())
            out.append(_parameter_type()(t, requires_grad=grad) if i in params
                       else t.requires_grad_(grad))
        else:
            out.append(t)
    return out if len(out) == job["n_inputs"] else None


def clean_jobs(store, max_age_s: float = 24 * 3600.0, dry_run: bool = False) -> list[Path]:
    """Remove job directories older than ``max_age_s`` (their server is gone or failed);
    ``dry_run``: only say which."""
    removed = []
    jobs = store.root / "jobs"
    if not jobs.is_dir():
        return removed
    now = time.time()
    for d in jobs.iterdir():
        try:
            if now - d.stat().st_mtime > max_age_s:
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
        except OSError:
            continue
    return removed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m torch_cudal1.serve.worker JOBDIR", file=sys.stderr)
        return 2
    directory = Path(argv[0])
    from ..bench.timing_cpus import apply_work_cpus
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
    if not _server_alive(directory):
        # Nobody will read the result: the job's data (the user's real inputs) goes now.
        shutil.rmtree(directory, ignore_errors=True)
    return 0 if result.get("status") in ("stored", "exists") else 1


def _server_alive(directory: Path) -> bool:
    from ..procutil import pid_alive
    try:
        pid = int(json.loads((directory / JOB).read_text()).get("server_pid") or 0)
    except (OSError, ValueError, TypeError):
        return True
    return pid <= 0 or pid_alive(pid)


if __name__ == "__main__":
    sys.exit(main())
