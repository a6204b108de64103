"""A managed local OpenAI-compatible server (``vllm serve`` by default).

``start`` launches the server command in its own session, waits until ``/v1/models`` answers and
records URL, pid and command line in ``<cache_dir>/engine/server.json``; later runs (the openai
engine when ``engine_url`` is unset, ``cudal1 engine status/stop``) read that file. The recorded
command line is compared with the live process before signalling it, so a recycled pid is never
killed by mistake.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from ...procutil import pid_alive  # noqa: F401 - also used by tests as server.pid_alive

import httpx

STATE_FILE = "server.json"


class ServerError(RuntimeError):
    pass


def state_dir(cache_dir) -> Path:
    return Path(cache_dir).expanduser() / "engine"


def state_path(cache_dir) -> Path:
    return state_dir(cache_dir) / STATE_FILE


def read_state(cache_dir) -> dict | None:
    try:
        return json.loads(state_path(cache_dir).read_text())
    except (OSError, ValueError):
        return None


def _write_state(cache_dir, state: dict) -> None:
    path = state_path(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def _ours(state: dict) -> bool:
    """The recorded pid still runs the recorded command (not a recycled pid)."""
    pid = int(state.get("pid", 0))
    if pid <= 0 or not pid_alive(pid):
        return False
    live = _cmdline(pid)
    return live is None or live == state.get("argv")


def probe(url: str, timeout: float = 5.0, api_key: str | None = None) -> list[str] | None:
    """Model ids served at ``url`` (``.../v1``), or None when it does not answer."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        r = httpx.get(url.rstrip("/") + "/models", timeout=timeout, headers=headers)
        if r.status_code != 200:
            return None
        return [m.get("id", "") for m in r.json().get("data", [])]
    except (httpx.HTTPError, ValueError):
        return None


def recorded_url(cache_dir) -> str | None:
    """URL of the managed server when its process is alive."""
    state = read_state(cache_dir)
    if state and _ours(state):
        return state.get("url")
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start(model: str, *, cache_dir, port: int | None = None, host: str = "127.0.0.1",
          command: str = "vllm serve", extra_args: list[str] | None = None,
          ready_timeout_s: float = 1800.0, say=None) -> dict:
    """Launch ``command MODEL --host H --port P [extra]`` and wait until it serves."""
    say = say or (lambda _msg: None)
    old = read_state(cache_dir)
    if old and _ours(old):
        raise ServerError(f"a managed server already runs at {old['url']} (pid {old['pid']}, "
                          f"model {old.get('model')}); stop it first with `cudal1 engine stop`")
    port = port or free_port(host)
    argv = shlex.split(command) + [model, "--host", host, "--port", str(port)] + list(extra_args or [])
    sdir = state_dir(cache_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    log_path = sdir / f"server-{port}.log"
    url = f"http://{host}:{port}/v1"
    with open(log_path, "ab") as log:
        try:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise ServerError(f"cannot run {argv[0]!r}: {e}") from None
    say(f"started {' '.join(argv)} (pid {proc.pid}); waiting for {url}/models (log: {log_path})")
    deadline = time.monotonic() + ready_timeout_s
    while True:
        code = proc.poll()
        if code is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise ServerError(f"server exited with code {code} before it was ready; log tail:\n{tail}")
        models = probe(url, timeout=2.0)
        if models is not None:
            break
        if time.monotonic() > deadline:
            _terminate(proc.pid)
            raise ServerError(f"server not ready within {ready_timeout_s:.0f} s (log: {log_path})")
        time.sleep(0.5)
    live = _cmdline(proc.pid)
    state = {"url": url, "pid": proc.pid, "model": model, "served": models, "argv": live or argv,
             "log": str(log_path), "started": time.time()}
    _write_state(cache_dir, state)
    return state


def status(cache_dir) -> dict:
    state = read_state(cache_dir)
    if not state:
        return {"running": False, "reason": "no managed server recorded"}
    alive = _ours(state)
    models = probe(state["url"], timeout=3.0) if alive else None
    return dict(state, running=alive, ready=models is not None, served=models)


def _terminate(pid: int, timeout: float = 30.0) -> None:
    # The server was started in its own session: its process group holds its workers too.
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        try:   # reap it when it is our own child (a server started by this process)
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(cache_dir, timeout: float = 30.0) -> bool:
    """Stop the managed server; True when one was running. The state file is removed either way."""
    state = read_state(cache_dir)
    if not state:
        return False
    running = _ours(state)
    if running:
        _terminate(int(state["pid"]), timeout)
    try:
        state_path(cache_dir).unlink()
    except FileNotFoundError:
        pass
    return running
