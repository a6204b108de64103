"""``cudal1 warm --ray ADDRESS`` against a real cluster started with ``ray start --head`` on
loopback, as a user runs it: current Ray (2.52 and later) starts clusters that ask for an
authentication token, and a driver must send it. A wrong token is one clear line, exit 2."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[default]')")

ROOT = Path(__file__).resolve().parents[1]
RECIPE = '''
import torch, torch.nn as nn
DYNAMIC = False


def models():
    torch.manual_seed(0)
    yield "net", nn.Sequential(nn.Linear(16, 12), nn.Tanh(), nn.Linear(12, 4)).eval(), \\
        [[torch.randn(4, 16)]]
'''


def _free_port() -> int:
    # Outside Ray's default worker port range (10002-19999), which its own checks reserve.
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 10002 <= port <= 19999:
            return port


def _ray_executable() -> str | None:
    here = Path(sys.executable).parent / "ray"
    return str(here) if here.exists() else shutil.which("ray")


def _descendants(root: int) -> list[int]:
    """Every process under ``root`` (Ray's workers leave its process group: found by parent)."""
    children: dict = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
            ppid = int(rest.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class RayHead:
    """``ray start --head --block`` in its own session, on free ports, with its own HOME (so its
    token, ``~/.ray/auth_token``, is the test's) and temp dir."""

    def __init__(self, base: Path):
        exe = _ray_executable()
        if exe is None:
            pytest.skip("the ray command is not installed")
        self.home = base / "home"
        self.home.mkdir()
        # Unix socket paths must stay short: the temp dir lives directly under /tmp.
        self.temp = tempfile.mkdtemp(prefix="cudal1-ray-", dir="/tmp")
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(HOME=str(self.home), PYTHONPATH=os.pathsep.join(
            [str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.env = env
        # A token for the cluster, where a user's `ray start` finds it (Ray without token
        # authentication has no such command: the cluster then runs without one).
        subprocess.run([exe, "get-auth-token", "--generate"], env=env, capture_output=True,
                       timeout=120)
        self.log = open(base / "ray-head.log", "wb")
        self.proc = subprocess.Popen(
            [exe, "start", "--head", "--block", "--port", str(self.port), "--num-cpus", "1",
             "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", self.temp,
             "--dashboard-port", str(_free_port()), "--ray-client-server-port", str(_free_port()),
             "--dashboard-agent-listen-port", str(_free_port())],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 180
        log_path = base / "ray-head.log"
        while b"block forever" not in log_path.read_bytes():
            if self.proc.poll() is not None or time.time() > deadline:
                text = log_path.read_text(errors="replace")[-3000:]
                self.stop()
                pytest.fail(f"ray start --head did not come up:\n{text}")
            time.sleep(0.5)

    def stop(self) -> None:
        procs = [self.proc.pid] + _descendants(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        for pid in procs:             # what did not stop in time, and workers outside the group
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    h = RayHead(tmp_path_factory.mktemp("rayhead"))
    yield h
    h.stop()


def _warm(head, tmp_path, **env_over):
    recipe = tmp_path / "recipe.py"
    recipe.write_text(RECIPE)
    env = dict(head.env, **env_over)
    return subprocess.run(
        [sys.executable, "-m", "torch_cudal1", "warm", str(recipe), "--ray", head.address,
         "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "-o", "baselines=eager",
         "-o", "rounds=0", "-o", "trials=1"],
        capture_output=True, text=True, timeout=600, env=env)


def test_cudal1_warm_joins_a_ray_start_cluster(head, tmp_path):
    from torch_cudal1.cache.store import CacheStore
    # No RAY_AUTH_MODE in the environment, as a user types it: the token is sent because one
    # is at hand (~/.ray/auth_token of the cluster's user).
    proc = _warm(head, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"units": 1, "skipped": 0, "failed": 0}
    assert "[1/1] net[0]" in proc.stderr and "ray warm: 1/1 units done" in proc.stderr
    assert len(CacheStore(tmp_path / "cache").keys()) == 1
    assert "Traceback" not in proc.stderr


def _ray_version() -> tuple:
    return tuple(int(p) for p in ray.__version__.split(".")[:2] if p.isdigit())


@pytest.mark.skipif(_ray_version() < (2, 52), reason="this Ray has no token authentication")
def test_a_wrong_token_is_one_clear_line(head, tmp_path):
    proc = _warm(head, tmp_path, RAY_AUTH_TOKEN="0" * 64)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"cudal1: error: the Ray cluster at {head.address} refused"), last
    assert "RAY_AUTH_TOKEN" in last
    assert not (tmp_path / "cache" / "v1" / "entries").exists() or not os.listdir(
        tmp_path / "cache" / "v1" / "entries")


def test_prepare_auth_sends_a_token_only_when_one_is_at_hand(tmp_path, monkeypatch):
    from torch_cudal1.distributed import ray_warm
    for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        # set, then deleted: monkeypatch then restores the variable's absence too, taking back
        # what prepare_auth writes into os.environ (a Ray started later in this process would
        # otherwise run in token mode)
        monkeypatch.setenv(k, "")
        monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ray_warm.prepare_auth("127.0.0.1:1") is None and "RAY_AUTH_MODE" not in os.environ
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("f" * 64)
    assert ray_warm.prepare_auth(None) is None                    # a local cluster: Ray's own
    assert ray_warm.prepare_auth("127.0.0.1:1") == "token" and os.environ["RAY_AUTH_MODE"] == "token"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")               # the user's choice stands
    assert ray_warm.prepare_auth("127.0.0.1:1") is None and os.environ["RAY_AUTH_MODE"] == "disabled"
