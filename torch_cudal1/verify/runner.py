"""Verify one candidate: build, check and (if accepted) time it, out of this process.

The parent only reads the candidate's source (static filter, ``static.py``). The verdict is
made by the judge, ``python -m torch_cudal1.verify.judge WORKDIR`` (or the same code in a
process forked from the ``forkserver`` template), which never runs candidate code: it starts the
candidate's own worker inside the OS sandbox (``os_sandbox.py``) and talks to it through pipes
and shared memory (``judge.py``). The judge runs in its own process group (so the whole group
can be killed) within the caller's session (``process.own_group``), dies with its parent, under a
wall-clock limit and, on CPU, a memory limit (RLIMIT_AS, which the worker inherits; CUDA maps huge
virtual ranges, so GPU runs get none unless asked). Whatever the candidate does (crash, hang,
``os._exit``, a CUDA fault) becomes a Verdict.

Builds go to ``<build_cache_dir>/<hash of source, torch, GPU>`` so a retry does not rebuild; the
extension directories are then copied to ``WORKDIR/build/<ext_name>/``, where the search picks up
the winner's artefacts.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..contracts import Candidate, Timing, Verdict
from ..options import build_cache_dir
from ..options import env as setting
from ..task import Task
from . import heap, loaded_builds
from .process import CANDIDATE_FILE, REAL_INPUTS_FILE, REQUEST_FILE, RESULT_FILE, child_limits

CPU_MEMORY_LIMIT_MB = 32768.0


def default_build_cache_dir() -> str:
    """Where candidates' builds live unless the caller names a dir (``options.build_cache_dir``)."""
    return build_cache_dir()


def _write_real_inputs(task: Task, workdir: Path, limit_mb: float) -> bool:
    if not task.real_inputs:
        return False
    from ..harness import real_inputs
    return real_inputs.save(task.real_inputs, str(workdir / REAL_INPUTS_FILE),
                            int(limit_mb * 2**20))


def _start_child(wd: Path, env: dict, log, memory_limit_mb):
    """The child process and a writable stdin: forked from a template that has torch imported
    (``forkserver``) where wanted and available, else a fresh interpreter."""
    from . import forkserver
    how = forkserver.mode()
    srv = None if how == "off" else forkserver.server_for(env, wait=how == "always")
    if srv is not None:
        r, w = os.pipe()
        try:
            child = srv.spawn({"wd": str(wd), "env": env, "memory_limit_mb": memory_limit_mb},
                              r, log.fileno())
            return child, os.fdopen(w, "wb")
        except (OSError, ValueError) as e:
            os.close(w)
            forkserver.discard(srv)
            from ..log import logger
            logger.debug("verifier fork server unavailable (%s); starting a fresh interpreter", e)
        finally:
            os.close(r)
    cmd = [sys.executable, "-m", "torch_cudal1.verify.judge", str(wd)]
    proc = subprocess.Popen(cmd, cwd=str(wd), env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.PIPE, preexec_fn=child_limits(memory_limit_mb))
    return proc, proc.stdin


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def _collect_build(build_dir: str | None, wd: Path, kept: dict | None) -> str | None:
    """Copy into ``wd/build`` (the cache's artefacts) exactly the built files the judge saw the
    candidate's process load and vouched for (``kept``: relpath -> sha256, from
    ``loaded_builds.py``), each checked against its hash once copied: a file changed after the
    judge's last look (by code the worker ran on its way out) is the reason returned, and nothing
    is kept. Where nothing was vouched for, nothing is copied (the winner builds when served)."""
    if not build_dir or not kept or not os.path.isdir(build_dir):
        return None
    dest = wd / "build"
    for rel, digest in sorted(kept.items()):
        src, out = Path(build_dir) / rel, dest / rel
        if os.path.isabs(rel) or ".." in Path(rel).parts or src.is_symlink():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
        if loaded_builds.sha256(str(out)) != digest:
            shutil.rmtree(dest, ignore_errors=True)
            return f"{rel} changed on disk after the judge's last look at it"
    return None


def _drop_build(result: dict, build_root: str) -> None:
    """A refused candidate's build folders, removed: the candidate could write there (its own
    compiles, CUDA's JIT cache ``.nv``, its Triton and inductor caches ``.jit``), so whatever
    it left (files of any size) would outlive the verdict. The harness's own candidates keep
    theirs for the next search."""
    d = result.get("build_dir")
    if not d or not result.get("untrusted"):
        return
    root = os.path.realpath(build_root) + os.sep
    for path in (d, d + ".nv", d + ".jit"):   # the folders ``judge`` lets the worker write
        real = os.path.realpath(path)
        if real.startswith(root) and real != root.rstrip(os.sep):
            shutil.rmtree(path, ignore_errors=True)


def child_env(extra_env: dict | None = None, build_cache_dir: str | None = None) -> dict:
    """The environment a verifier child runs with."""
    env = dict(os.environ)
    env.update(extra_env or {})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    heap.with_steady_heap(env)
    env["CUDAL1_BUILD_CACHE_DIR"] = str(Path(build_cache_dir or default_build_cache_dir()).expanduser())
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2])] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def prestart_children(extra_env: dict | None = None, build_cache_dir: str | None = None) -> None:
    """Many verifications are coming (a search): start the fork-server template now, so that
    the first of them can be forked from it too (``forkserver.prestart``)."""
    from . import forkserver
    try:
        forkserver.prestart(child_env(extra_env, build_cache_dir))
    except OSError as e:   # never in the way: children then start as fresh interpreters
        from ..log import logger
        logger.debug("verifier fork server not started early (%s)", e)


def _ours(candidate: Candidate) -> bool:
    """Candidates the harness writes itself (baselines, the built-in engine's templates); the
    rest — from an engine, a transcript, a user's file — compile into private caches."""
    return candidate.identity.engine in ("baseline", "builtin")


def evaluate(task: Task, candidate: Candidate, *, device: str = "cpu", trials: int = 3,
             timeout_s: float = 300.0, time_it: bool = True, workdir: str | None = None,
             capture_limit_mb: float = 64.0, keep: bool = False,
             extra_env: dict | None = None, memory_limit_mb: float | None = -1,
             build_cache_dir: str | None = None, check_stride: bool = False,
             cuda_graph: bool = False, time_budget_s: float = 2.0,
             pair_reference: bool = False, precision: str | None = None,
             settings: dict | None = None) -> tuple[Verdict, Timing | None]:
    """Verify ``candidate`` against ``task`` in a child process; time it when accepted (and,
    with ``pair_reference``, the reference right after it: ``timing.extra["paired_ref_ms"]``).

    ``memory_limit_mb``: -1 (default) = ``CUDAL1_VERIFY_MEMORY_MB`` or 32 GiB on CPU and none on
    CUDA; ``None``/0 = no limit. ``verdict.stats`` gains ``phases`` (seconds per phase).
    ``precision``: the float32 precision the tolerances follow (default: this process's
    ``torch.get_float32_matmul_precision()``); ``settings``: the numerics settings the candidate
    runs under (default: this process's, ``global_settings.snapshot()``)."""
    from .static import check_source
    reason, detail = check_source(candidate.source)
    if reason != "ok":
        return Verdict.reject(reason, f"static check: {detail}"), None
    own = workdir is None
    wd = Path(workdir or tempfile.mkdtemp(prefix="cudal1-eval-"))
    wd.mkdir(parents=True, exist_ok=True)
    for stale in (RESULT_FILE, RESULT_FILE + ".tmp"):
        (wd / stale).unlink(missing_ok=True)
    if memory_limit_mb == -1:
        env_mb = setting("CUDAL1_VERIFY_MEMORY_MB")
        memory_limit_mb = float(env_mb) if env_mb else (
            None if str(device).startswith("cuda") else CPU_MEMORY_LIMIT_MB)
    if precision is None or settings is None:
        import torch
        from .. import global_settings
        precision = precision or torch.get_float32_matmul_precision()
        settings = settings if settings is not None else global_settings.snapshot()
    from .. import global_settings as _gs
    settings = _gs.to_json(settings)
    try:
        task.write(wd)
        (wd / CANDIDATE_FILE).write_text(candidate.source)
        has_real = _write_real_inputs(task, wd, capture_limit_mb)
        build_root = str(Path(build_cache_dir or default_build_cache_dir()).expanduser())
        (wd / REQUEST_FILE).write_text(json.dumps({
            "device": device, "trials": trials, "time_it": time_it, "real_inputs": has_real,
            "build_root": build_root,
            "native": setting("CUDAL1_NATIVE"),
            "check_stride": check_stride, "cuda_graph": cuda_graph,
            "time_budget_s": time_budget_s, "pair_reference": pair_reference,
            "isolate": not _ours(candidate), "precision": precision, "settings": settings,
            "timeout_s": timeout_s, "worker_env": extra_env or {}}))
        env = child_env(extra_env, build_cache_dir)
        t0 = time.monotonic()
        with open(wd / "child.log", "wb") as log:
            proc, stdin = _start_child(wd, env, log, memory_limit_mb)
            # The result must carry this nonce, which the child reads before the candidate is
            # imported and which never touches the disk: a candidate that writes result.json
            # itself and exits cannot forge an acceptance.
            nonce = os.urandom(16).hex()
            try:
                stdin.write((nonce + "\n").encode())
                stdin.close()
            except OSError:
                pass
            try:
                rc = proc.wait(timeout=timeout_s + 30.0)   # the judge keeps the limit itself
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
                return Verdict.reject("timeout", f"no result within {timeout_s:.0f} s"), None
            finally:
                _kill_group(proc)   # grandchildren left behind (threads' subprocesses, ...)
        result_path = wd / RESULT_FILE
        if not result_path.exists():
            tail = (wd / "child.log").read_text(errors="replace")[-1500:].strip()
            why = f"signal {-rc}" if rc < 0 else f"code {rc}"
            reason = "memory" if ("MemoryError" in tail or "std::bad_alloc" in tail) else "crash"
            return Verdict.reject(reason, f"child exited with {why} and no result: {tail}"), None
        try:
            result = json.loads(result_path.read_text())
        except ValueError:
            return Verdict.reject("crash", "result.json is not valid JSON"), None
        if result.get("nonce") != nonce:
            return Verdict.reject("forbidden_call", "result.json was not written by the harness "
                                                    "(the candidate wrote it)"), None
        verdict = Verdict.from_json(result["verdict"])
        verdict.stats.setdefault("phases", result.get("phases") or {})
        verdict.stats["phases"]["wall_s"] = round(time.monotonic() - t0, 3)
        try:
            changed = _collect_build(result.get("build_dir"), wd, result.get("artifacts"))
        except OSError:
            changed = None
            shutil.rmtree(wd / "build", ignore_errors=True)
        if changed and verdict.accepted:
            _drop_build(result, build_root)
            return Verdict.reject("artifact_changed", changed), None
        if not verdict.accepted:
            _drop_build(result, build_root)
        timing = Timing.from_json(result.get("timing")) if verdict.accepted else None
        return verdict, timing
    finally:
        if own and not keep:
            shutil.rmtree(wd, ignore_errors=True)
