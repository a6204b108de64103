"""The OS sandbox holds on its own: with the worker's audit hook left out (``CUDAL1_AUDIT=0``),
candidate code still cannot run a shell command that reaches the host, send a datagram, change a
file outside its folders, leave a process behind, or read the user's secrets. The host is checked
afterwards, not the verdict (with the audit hook on, each of these is also ``forbidden_call``:
tests/adversarial/escape_*.py)."""
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, os_sandbox

TASK = Path(__file__).parent / "adversarial" / "tasks" / "diag_matmul.py"

needs_bwrap = pytest.mark.skipif(bool(os_sandbox.check()),
                                 reason=f"no bubblewrap sandbox here: {os_sandbox.check()}")

CANDIDATE = '''
import ctypes, importlib, os
import torch
import torch.nn as nn

def attempt(fn):
    try:
        fn()
    except BaseException:
        pass

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
{body}

    def forward(self, a, b):
        return a.unsqueeze(1) * b + (1.0 if getattr(self, "wrong", False) else 0.0)
'''


def _run(body: str, monkeypatch, tmp_path, **kw):
    monkeypatch.setenv("CUDAL1_AUDIT", "0")
    monkeypatch.setenv("CUDAL1_SANDBOX", "bwrap")
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    src = CANDIDATE.format(body="\n".join("        " + line for line in body.strip().splitlines()))
    return evaluate(Task.from_file(TASK), Candidate(src, origin="openai:r1s0"),
                    timeout_s=120, time_budget_s=0.2, build_cache_dir=str(tmp_path / "builds"), **kw)


@needs_bwrap
def test_a_shell_command_cannot_reach_the_host(monkeypatch, tmp_path):
    probe = tmp_path / "shell_probe"
    verdict, _ = _run(f'''
attempt(lambda: ctypes.pythonapi.system(b"touch {probe}"))
attempt(lambda: os.system("touch {probe}"))
attempt(lambda: importlib.import_module("subprocess").run(["touch", "{probe}"]))
''', monkeypatch, tmp_path)
    assert verdict.stats.get("sandbox", "bwrap") == "bwrap"
    assert not probe.exists()


@needs_bwrap
def test_no_datagram_leaves_and_no_secret_is_there(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDAL1_REMOTE_SECRET", "s3cr3t-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.5)
    port = rx.getsockname()[1]
    try:
        verdict, _ = _run(f'''
so = importlib.import_module("socket")
secret = (os.environ.get("CUDAL1_REMOTE_SECRET", "") + os.environ.get("OPENAI_API_KEY", "")).encode() or b"empty"
def send():
    s = so.socket(so.AF_INET, so.SOCK_DGRAM)
    s.sendmsg([secret], [], 0, ("127.0.0.1", {port}))
attempt(send)
if os.environ.get("CUDAL1_REMOTE_SECRET") or os.environ.get("OPENAI_API_KEY"):
    raise RuntimeError("LEAKED " + secret.decode())
''', monkeypatch, tmp_path)
        with pytest.raises(socket.timeout):
            rx.recvfrom(100)
    finally:
        rx.close()
    assert verdict.accepted, (verdict.reason, verdict.detail)   # it saw no secret to raise with
    assert "s3cr3t" not in verdict.detail


@needs_bwrap
def test_files_outside_its_folders_stay_as_they_were(monkeypatch, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.txt"
    target.write_text("original\n")
    home_probe = Path.home() / "cudal1_sandbox_home_probe"
    _run(f'''
attempt(lambda: os.link("{target}", "linked"))
attempt(lambda: open("linked", "a").write("appended\\n"))
attempt(lambda: open("{target}", "a").write("appended\\n"))
attempt(lambda: os.truncate("{target}", 0))
attempt(lambda: os.mkdir("{outside}/made"))
attempt(lambda: os.symlink("/etc/hostname", "{outside}/link"))
attempt(lambda: open("{home_probe}", "w").write("x"))
attempt(lambda: os.remove("{target}"))
''', monkeypatch, tmp_path)
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert not home_probe.exists()


@needs_bwrap
def test_no_process_outlives_the_candidate(monkeypatch, tmp_path):
    probe = tmp_path / "survivor_probe"
    marker = f"cudal1-survivor-{os.getpid()}"
    _run(f'''
sp = importlib.import_module("subprocess")
sp.Popen(["sh", "-c", "exec -a {marker} sleep 2; touch {probe}"], start_new_session=True)
def forked():
    if os.fork() == 0:
        os.setsid()
        time = importlib.import_module("time")
        time.sleep(2)
        open("{probe}", "w").write("x")
        os._exit(0)
attempt(forked)
''', monkeypatch, tmp_path)
    time.sleep(3)
    assert not probe.exists()
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert marker not in ps


def test_scrubbed_environment_keeps_what_builds_need():
    env = os_sandbox.scrubbed_env({"PATH": "/usr/bin", "CUDA_HOME": "/usr/local/cuda",
                                   "CUDAL1_REMOTE_SECRET": "x", "CUDAL1_API_KEY": "y",
                                   "OPENAI_API_KEY": "z", "AWS_SECRET_ACCESS_KEY": "w",
                                   "TORCH_EXTENSIONS_DIR": "/b", "CUDA_TOKEN": "t",
                                   "HF_TOKEN": "h", "LC_ALL": "C", "TMPDIR": "/t"})
    assert env == {"PATH": "/usr/bin", "CUDA_HOME": "/usr/local/cuda", "TORCH_EXTENSIONS_DIR": "/b",
                   "LC_ALL": "C", "TMPDIR": "/t"}


def test_required_sandbox_refuses_without_bubblewrap(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDAL1_BWRAP", str(tmp_path / "no-bwrap-here"))
    monkeypatch.setenv("CUDAL1_SANDBOX", "bwrap")
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    src = (Path(__file__).parent / "adversarial" / "honest_diag_broadcast.py").read_text()
    verdict, _ = evaluate(Task.from_file(TASK), Candidate(src, origin="openai:r1s0"),
                          timeout_s=60, time_it=False, build_cache_dir=str(tmp_path / "b"))
    assert verdict.reason == "sandbox" and "bubblewrap" in verdict.detail, verdict.detail


@needs_bwrap
def test_other_files_of_the_host_are_not_there_to_read(monkeypatch, tmp_path):
    """Homes and temporary folders are empty in the sandbox, save what the worker needs: a
    candidate reads no one's files, and so cannot carry them out in an error message."""
    secret = tmp_path / "notes.txt"
    secret.write_text("tmp-secret-value\n")
    home_file = Path.home() / ".cudal1_sandbox_read_probe"
    home_file.write_text("home-secret-value\n")
    try:
        verdict, _ = _run(f'''
found = []
for p in ("{secret}", "{home_file}"):
    try:
        found.append(open(p).read())
    except OSError:
        pass
if found:
    raise RuntimeError("READ " + " ".join(found))
''', monkeypatch, tmp_path)
    finally:
        home_file.unlink()
    assert verdict.accepted, (verdict.reason, verdict.detail)   # it found nothing to raise with
    assert "secret-value" not in verdict.detail


def _listening_socket_under_run():
    """A unix socket listening where host services keep theirs (``/run``); None where this
    user may not make one there."""
    path = f"/run/cudal1-sandbox-probe-{os.getpid()}.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
    except OSError:
        s.close()
        return None, path
    s.listen(1)
    s.settimeout(0.5)
    return s, path


@needs_bwrap
def test_the_hosts_unix_sockets_cannot_be_reached(monkeypatch, tmp_path):
    """A read-only mount does not stop a connect(): a service's socket in the system folders
    (a container runtime's, D-Bus, a database's) would take requests from C code of a candidate
    (no audit event). The sandbox covers each with /dev/null."""
    listener, path = _listening_socket_under_run()
    if listener is None:
        pytest.skip("cannot make a unix socket under /run here")
    try:
        verdict, _ = _run(f'''
so = importlib.import_module("socket")
c = so.socket(so.AF_UNIX, so.SOCK_STREAM)
try:
    c.connect("{path}")
    c.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
    raise RuntimeError("CONNECTED")
except OSError:
    pass
''', monkeypatch, tmp_path)
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
        os.unlink(path)
    assert verdict.accepted, (verdict.reason, verdict.detail)   # its connect() was refused


@needs_bwrap
def test_what_a_refused_candidate_left_in_its_build_folder_goes_with_it(monkeypatch, tmp_path):
    """The build folders are the one place outside its work dir a candidate may write (its own
    compiles, CUDA's JIT cache, its Triton and inductor caches), and they outlive the
    verification: a refused candidate's are removed, files and all; an accepted one keeps its
    own."""
    left = '''
for var in ("TORCH_EXTENSIONS_DIR", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR"):
    d = importlib.import_module("pathlib").Path(os.environ[var])
    d.mkdir(parents=True, exist_ok=True)
    d.joinpath("left_behind.bin").write_bytes(b"x" * (1 << 20))
'''
    refused, _ = _run(left + "self.wrong = True", monkeypatch, tmp_path, time_it=False)
    builds = tmp_path / "builds"
    assert not refused.accepted and refused.reason == "mismatch", refused
    assert not list(builds.rglob("left_behind.bin"))
    accepted, _ = _run(left, monkeypatch, tmp_path, time_it=False)
    assert accepted.accepted, accepted.detail
    assert len(list(builds.rglob("left_behind.bin"))) == 3


@needs_bwrap
def test_a_link_in_place_of_its_log_shows_nothing_of_the_host(monkeypatch, tmp_path):
    """The worker's log is in its writable folder, and the judge quotes its tail when the worker
    dies: a link put in the log's place must not make the judge read a file the sandbox could
    not (the secret below, under a folder it does not bind), nor a device without end."""
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    secret = secret_dir / "key.txt"
    secret.write_text("HOST-SECRET-7391")
    for target in (secret, "/dev/zero"):
        verdict, _ = _run(f'''
getattr(os, "un" + "link")("worker.log")
getattr(os, "sym" + "link")("{target}", "worker.log")
getattr(os, "_ex" + "it")(3)
''', monkeypatch, tmp_path, time_it=False)
        assert not verdict.accepted and verdict.reason == "crash", verdict
        assert "HOST-SECRET" not in verdict.detail
