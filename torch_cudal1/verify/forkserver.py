"""Judges forked from a template process that has already imported torch.

Every candidate still runs in a fresh process of its own (own group, memory limit, parent-death
signal, its log as stdout/stderr), but it is forked from a template that imported torch and
torch.compile's stack once, instead of paying those imports (3-8 s) per candidate. No candidate
code ever runs in the template. The template never initialises CUDA (it checks, and refuses to
serve if it did), so each child initialises its own device context, as a fresh interpreter would.

The one-time token that authenticates the child's result never passes through the template:
the parent hands the child's stdin (a pipe it alone writes) and log file over the socket as file
descriptors (SCM_RIGHTS), so a later child forked from the same template cannot find an earlier
child's token in its memory.

``CUDAL1_VERIFY_FORKSERVER``: ``auto`` (default) uses the template: a search starts it before its
first verification (``prestart``), and elsewhere a process's second verification starts it. A
verification that finds the template starting waits for it (up to ``_JOIN_LIMIT_S``) rather than
import torch a second time beside it, which would also load the host while candidates are
timed. On CUDA too: a forked judge initialises its own device context (KernelBench tasks spent a
median 3 s outside their verification phases forked against 45 s without,
``benchmarks/runner_phases.py``). The candidate's own worker is never forked from it: the judge
starts it as a fresh interpreter inside the OS sandbox. ``1``: always (waiting for the template).
``0``: never. Any failure to start or reach the template falls back to a plain child interpreter.
A template idle for ``CUDAL1_VERIFY_FORKSERVER_IDLE_S`` (120 s) exits; the next one starts on demand.
"""
from __future__ import annotations

import atexit
import hashlib
import importlib
import json
import os
import queue
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from ..options import env
from .process import child_limits

_MAX_SERVERS = 4
_START_LIMIT_S = 120.0   # a template not ready by then is given up
_JOIN_LIMIT_S = 30.0     # auto: a starting template is waited for this long, then a fresh child
# A template with nothing to do for this long exits (a clean exit, not a failure: the next
# verification starts another), so that a process that compiled its model at start does not keep
# an interpreter with torch's compile stack (0.4 GB and more) for the rest of its life.
_IDLE_DEFAULT_S = 120.0


def _idle_seconds() -> float:
    try:
        return max(1.0, float(env("CUDAL1_VERIFY_FORKSERVER_IDLE_S")))
    except ValueError:
        return _IDLE_DEFAULT_S


def mode() -> str:
    """``off``, ``auto`` (start the template where verifications come in numbers, wait for it
    while it starts) or ``always`` (wait for it, up to ``_START_LIMIT_S``)."""
    m = str(env("CUDAL1_VERIFY_FORKSERVER")).lower()
    if m in ("0", "false", "no", "off"):
        return "off"
    if m in ("1", "true", "yes", "on"):
        return "always"
    return "auto"


def _read_line(conn: socket.socket) -> bytes | None:
    """One newline-terminated message from the template, or None when it hung up first."""
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            return None
        buf += chunk
    return buf


class Child:
    """The parent's handle on one forked child: the subset of ``Popen`` that evaluate uses."""

    def __init__(self, pid: int, conn: socket.socket):
        self.pid, self._conn, self.returncode = pid, conn, None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        self._conn.settimeout(timeout)
        try:
            line = _read_line(self._conn)
        except socket.timeout:
            raise subprocess.TimeoutExpired("verifier child", timeout) from None
        # No line: the template died, and so did the child (parent-death signal).
        self.returncode = int(line.split()[-1]) if line else -signal.SIGKILL
        self._conn.close()
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class ForkServer:
    """One template process. Starting it costs what the imports cost; until it is ready the
    caller starts plain child interpreters, so a process that verifies one candidate pays
    nothing extra in waiting, and one that verifies many pays the imports once."""

    def __init__(self, env: dict):
        self.dir = tempfile.mkdtemp(prefix="cudal1-fork-")
        self.path = os.path.join(self.dir, "sock")
        self.proc: subprocess.Popen | None = None
        self.started = time.monotonic()
        self.was_ready = False
        err = open(os.path.join(self.dir, "server.log"), "wb")
        try:
            self.proc = _keeper().launch([sys.executable, "-m", "torch_cudal1.verify.forkserver",
                                          self.path, str(_idle_seconds())], env, err)
        finally:
            err.close()

    def ready(self) -> bool:
        ok = self.alive() and os.path.exists(self.path + ".ready")
        if ok:
            self.was_ready = True
        return ok

    def broken(self) -> bool:
        """Dead, never up in time, or up once and now unreachable (its socket removed)."""
        if not self.alive():
            return True
        up = self.ready()
        return not up and (self.was_ready or time.monotonic() - self.started > _START_LIMIT_S)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def retired(self) -> bool:
        """It exited on its own after its idle time (exit status 0)."""
        return self.proc is not None and self.proc.poll() == 0

    def spawn(self, request: dict, stdin_fd: int, log_fd: int) -> Child:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [stdin_fd, log_fd])
            conn.settimeout(60)
            line = _read_line(conn)
            if line is None:
                raise OSError("fork server closed the connection")
            return Child(int(line), conn)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class _Keeper(threading.Thread):
    """Starts the templates from one long-lived thread: their parent-death signal fires when the
    starting *thread* ends, and worker threads of a pool come and go."""

    def __init__(self):
        super().__init__(name="cudal1-forkserver", daemon=True)
        self.jobs: queue.Queue = queue.Queue()

    def launch(self, argv, env, err) -> subprocess.Popen:
        done: queue.Queue = queue.Queue()
        self.jobs.put((argv, env, err, done))
        result = done.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def run(self) -> None:
        while True:
            argv, env, err, done = self.jobs.get()
            try:
                done.put(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                          stdout=err, stderr=err, preexec_fn=child_limits(None)))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                done.put(e)


_KEEPER: _Keeper | None = None
_SERVERS: dict[str, ForkServer] = {}
_FAILED: dict[str, int] = {}
_SEEN: dict[str, int] = {}
_LOCK = threading.Lock()


def _keeper() -> _Keeper:
    global _KEEPER
    if _KEEPER is None:
        _KEEPER = _Keeper()
        _KEEPER.start()
        atexit.register(_close_all)
    return _KEEPER


def _close_all() -> None:
    """At exit: stop the templates and remove their directories (the parent-death signal
    would stop them anyway, but leave the directories behind)."""
    with _LOCK:
        while _SERVERS:
            _SERVERS.popitem()[1].close()


def server_for(env: dict, wait: bool = False) -> ForkServer | None:
    """The ready template for this environment, waited for while it is starting (up to
    ``_JOIN_LIMIT_S``, or ``_START_LIMIT_S`` with ``wait``); None (then start a plain child)
    where there is none yet or it failed. Torch reads some variables at import time, so a
    different environment gets its own template."""
    key, stable = _key(env)
    srv = _server_for(key, stable, wait)
    deadline = time.monotonic() + (_START_LIMIT_S if wait else _JOIN_LIMIT_S)
    while srv is None and key in _SERVERS and time.monotonic() < deadline:
        time.sleep(0.05)
        srv = _server_for(key, stable, wait)
    return srv


def prestart(env: dict) -> None:
    """Start the template for ``env`` now, without waiting: a search is about to verify many
    candidates, and its first child can then be forked too."""
    if mode() == "off":
        return
    key, stable = _key(env)
    _server_for(key, stable, True)


def _key(env: dict) -> tuple[str, dict]:
    # Only what the template's imports could read counts: the child runs with the request's
    # own environment (our CUDAL1_* settings are read at run time; pytest renames a variable
    # per test).
    stable = {k: v for k, v in env.items() if not k.startswith(("CUDAL1_", "PYTEST_"))}
    return hashlib.sha256(json.dumps(sorted(stable.items())).encode()).hexdigest(), stable


def _server_for(key: str, env: dict, wait: bool) -> ForkServer | None:
    with _LOCK:
        srv = _SERVERS.get(key)
        if srv is not None:
            if srv.ready():
                return srv
            if not srv.retired():
                if srv.broken():   # try again later, twice at most
                    _FAILED[key] = _FAILED.get(key, 0) + 1
                    _SERVERS.pop(key).close()
                return None
            _SERVERS.pop(key).close()   # idle for a while, then gone: another starts now
        _SEEN[key] = _SEEN.get(key, 0) + 1
        # A process that verifies once never pays for a template; the second verification in
        # the same environment starts one (and waits for it, see server_for).
        if _FAILED.get(key, 0) >= 2 or (_SEEN[key] < 2 and not wait):
            return None
        while len(_SERVERS) >= _MAX_SERVERS:
            _SERVERS.pop(next(iter(_SERVERS))).close()
        try:
            _SERVERS[key] = ForkServer(env)
        except OSError:
            _FAILED[key] = _FAILED.get(key, 0) + 1
        return None


def discard(srv: ForkServer) -> None:
    """A template that could not be reached: never used again (a new one may start)."""
    with _LOCK:
        for key, s in list(_SERVERS.items()):
            if s is srv:
                _FAILED[key] = _FAILED.get(key, 0) + 1
                del _SERVERS[key]
    srv.close()


# -- the template process -----------------------------------------------------------------------
def _child_main(msg: dict, fds: list[int]) -> None:
    """In the forked child: become the fresh verifier child that ``msg`` describes."""
    try:
        child_limits(msg.get("memory_limit_mb"))()
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.chdir(msg["wd"])
        os.environ.clear()
        os.environ.update(msg["env"])
        sys.argv = ["torch_cudal1.verify.judge", msg["wd"]]
        sys.path.insert(0, msg["wd"])
        import random
        random.seed()   # not the template's state, shared by every child
        from . import judge
        judge.main()
    finally:
        os._exit(70)


def _fork_is_safe() -> bool:
    """Whether a child forked now may use CUDA. ``torch.cuda.is_available()`` (which imports may
    call) initialises the CUDA driver without marking CUDA initialised, and torch then refuses
    CUDA in forked children ("Cannot re-initialize CUDA in forked subprocess"): ask a probe."""
    import torch
    bad = getattr(torch._C, "_cuda_isInBadFork", None)
    if bad is None:
        return True
    pid = os.fork()
    if pid == 0:
        os._exit(1 if bad() else 0)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def serve(path: str, idle_s: float = _IDLE_DEFAULT_S) -> None:
    # Imports that ask whether CUDA is available ask NVML instead of initialising the driver
    # (children replace the environment with the request's, so only the template has this).
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import torch
    import torch._dynamo  # noqa: F401 - the import cost every compiled candidate pays
    try:
        import torch._inductor.compile_fx  # noqa: F401
    except Exception:  # noqa: BLE001 - inductor is optional for plain candidates
        pass
    importlib.import_module(__package__ + ".judge")   # the judge itself, imported once here
    if torch.cuda.is_initialized() or not _fork_is_safe():
        raise SystemExit("CUDA was initialised while importing: children could not fork safely")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    children: dict[int, socket.socket] = {}
    rd, wr = socket.socketpair()
    rd.setblocking(False)
    wr.setblocking(False)
    signal.set_wakeup_fd(wr.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(rd, selectors.EVENT_READ)
    open(path + ".ready", "w").close()
    last_busy = time.monotonic()
    while True:
        events = sel.select(timeout=max(1.0, idle_s / 4))
        if children:
            last_busy = time.monotonic()
        elif not events and time.monotonic() - last_busy >= idle_s:
            for p in (path + ".ready", path):   # not ready any more, then gone at once
                try:
                    os.unlink(p)
                except OSError:
                    pass
            os._exit(0)
        for key, _ in events:
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
                    msg = json.loads(data)
                except (OSError, ValueError):
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for s in (listener, rd, wr, *children.values()):
                        s.close()
                    _child_main(msg, fds)
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                last_busy = time.monotonic()
                try:
                    conn.sendall(f"{pid}\n".encode())
                except OSError:
                    pass
            else:
                try:
                    while rd.recv(4096):
                        pass
                except BlockingIOError:
                    pass
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                try:
                    conn.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else _IDLE_DEFAULT_S)
