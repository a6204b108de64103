"""The operating-system sandbox around every process that runs candidate code (bubblewrap).

A candidate's worker (``harness/worker.py``) is started as ``bwrap ... python -`` with:

* every namespace new (``--unshare-all``): no network (not even the host's loopback), its own
  process tree (when its first process ends, the kernel kills every process left in it, a
  ``setsid`` one too), its own IPC and host name; a session of its own (``--new-session``) only
  where the process starting it still has a controlling terminal (the verifier's processes let
  go of theirs, ``process.own_group``), so that it shares the CPUs as the user's processes do;
* no capabilities (``--cap-drop ALL``), so it cannot remount what it was given read-only;
* the system's folders read-only, every other top-level folder (homes, ``/tmp``, ``/mnt``,
  project and data folders) and ``/var/tmp`` hidden behind empty private ones, with what it needs
  there (Python, its packages, this package, CUDA, the paths of its environment) bound back
  read-only; a private ``/dev/shm``, and read-write only the folders it is given (its work
  folder, its build folder, compiler caches); the host's unix sockets in the system folders
  (a container runtime's, D-Bus, a database's) covered with ``/dev/null``, since a read-only
  mount does not stop a ``connect()``;
* the environment cleared to an allowlist (``scrubbed_env``): no API keys, no cache secret;
* the GPU's device files (``/dev/nvidia*``) bound in where the verification is on a GPU.

``CUDAL1_SANDBOX``: ``auto`` (default: bubblewrap where it works, else no OS sandbox and one loud
warning), ``bwrap`` (required: verification refuses to run candidate code without it), ``none``
(off, e.g. inside a container that is the sandbox). ``CUDAL1_BWRAP``: the bwrap executable
(default: ``bwrap`` on ``PATH``), for hosts without the package (a copied binary, or a wrapper
script setting ``LD_LIBRARY_PATH`` for it).
"""
from __future__ import annotations

import glob
import os
import shutil
import stat
import subprocess
import threading
import time

from ..log import logger
from ..options import env
from .process import has_terminal

_ALLOW = {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "PYTHONPATH",
          "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS",
          "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
          "CUDAL1_TIMING_CPUS", "CUDAL1_NATIVE", "CUDAL1_AUDIT",
          # the heap regime of every verifier process (heap.py)
          "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}
_ALLOW_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TORCH_", "TORCHINDUCTOR_", "TRITON_", "CUPY_",
                   "NCCL_")
# Variables under an allowed prefix that can still hold a credential.
_DENY_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL")
_HIDDEN = ("~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker",
           "~/.netrc", "~/.git-credentials", "~/.pypirc", "~/.config/gh")

# Unix sockets of the host's services (a container runtime's, D-Bus, a database's or the Redis
# tier's) live in the system folders the sandbox shows read-only, and a read-only mount does not
# stop a connect(): C code of a candidate (no audit event) could talk to them. Each one found
# (folder, depth) is covered with /dev/null. The NVIDIA driver's own helpers stay.
_SOCKET_ROOTS = (("/run", 6), ("/var", 3), ("/opt", 2), ("/etc", 1))
_SOCKET_SKIP = ("/var/lib/docker", "/var/lib/containerd", "/var/lib/dpkg", "/var/lib/apt",
                "/var/cache", "/var/log")
_SOCKET_SCAN_MAX = 20000     # entries looked at, at most
_SOCKET_SCAN_TTL_S = 30.0    # a scan serves the workers started within this long
_sockets: dict = {}

_probe_lock = threading.Lock()
_probe: dict = {}
_warned = [False]


def mode() -> str:
    m = str(env("CUDAL1_SANDBOX")).strip().lower()
    if m in ("0", "off", "false", "no"):
        m = "none"
    if m not in ("auto", "bwrap", "none"):
        raise ValueError(f"CUDAL1_SANDBOX={m!r}; expected auto, bwrap or none")
    return m


def bwrap_path() -> str | None:
    exe = env("CUDAL1_BWRAP") or shutil.which("bwrap")
    return exe if exe and os.access(exe, os.X_OK) else None


def scrubbed_env(env: dict) -> dict:
    """The variables of ``env`` a candidate may see."""
    out = {}
    for k, v in env.items():
        if k in _ALLOW or (k.startswith(_ALLOW_PREFIXES)
                           and not any(w in k.upper() for w in _DENY_WORDS)):
            out[k] = v
    return out


def _base_args(exe: str, new_session: bool = True) -> list[str]:
    # A session of its own only where this process still has a terminal to keep the candidate
    # from: a new session is a scheduling group of its own too (``process.own_group``).
    session = ["--new-session"] if new_session else []
    return [exe, "--unshare-all", "--die-with-parent", *session, "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]


def check() -> str:
    """'' where bubblewrap sandboxes work on this host, else why not (probed once)."""
    with _probe_lock:
        if "why" not in _probe:
            exe = bwrap_path()
            if exe is None:
                _probe["why"] = "bubblewrap (bwrap) is not installed"
            else:
                try:
                    r = subprocess.run(_base_args(exe) + ["true"], capture_output=True,
                                       timeout=30)
                    _probe["why"] = "" if r.returncode == 0 else (
                        "bwrap cannot create its namespaces here: "
                        + r.stderr.decode(errors="replace").strip()[:300])
                except (OSError, subprocess.TimeoutExpired) as e:
                    _probe["why"] = f"bwrap failed to start: {e}"
        return _probe["why"]


def active() -> bool:
    """Whether candidate code will run inside the OS sandbox. Warns once when it will not."""
    m = mode()
    if m == "none":
        return False
    why = check()
    if not why:
        return True
    if m == "auto" and not _warned[0]:
        _warned[0] = True
        logger.warning("candidate code runs WITHOUT an OS sandbox (%s): it has this user's "
                       "files, network and processes within reach. Install bubblewrap (apt-get "
                       "install bubblewrap) or set CUDAL1_SANDBOX=bwrap to refuse.", why)
    return False


def required() -> bool:
    return mode() == "bwrap"


def _gpu_devices() -> list[str]:
    return sorted(p for p in glob.glob("/dev/nvidia*") if os.path.exists(p)) + \
        sorted(glob.glob("/dev/dri"))


# Top-level folders of the system (programs, libraries, configuration, devices), seen as they
# are, read-only. Every other one (homes, /tmp, /mnt, /srv, project and data folders) is hidden
# behind an empty private one, and what the worker needs inside them is bound back read-only
# (``_needed``): a candidate reads no one's files, and carries none out in its error messages.
_SYSTEM = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var", "sys",
           "proc", "dev", "run", "boot", "snap", "nix"}
_HIDDEN_UNDER_SYSTEM = ("/var/tmp", "/run/user")


def _hidden_roots() -> list[str]:
    roots = []
    try:
        for name in sorted(os.listdir("/")):
            p = "/" + name
            if name not in _SYSTEM and os.path.isdir(p) and not os.path.islink(p):
                roots.append(p)
    except OSError:
        pass
    roots += [p for p in _HIDDEN_UNDER_SYSTEM if os.path.isdir(p)]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and not any((home + "/").startswith(r + "/") for r in roots):
        roots.append(home)
    return roots


def _needed(extra: list[str]) -> list[str]:
    """What the worker reads: Python and its packages, this package, CUDA, the paths of its
    environment (``PATH``, ``PYTHONPATH``, ``LD_LIBRARY_PATH``) and the given ones."""
    import sys
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)]
    paths += [p for p in sys.path if p]
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths.append(here)   # the folder holding the torch_cudal1 package
    for var in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
        paths += [p for p in os.environ.get(var, "").split(os.pathsep) if p]
    for var in ("CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV"):
        if os.environ.get(var):
            paths.append(os.environ[var])
    paths += extra
    out: dict[str, str] = {}
    for p in paths:
        p = os.path.abspath(p)
        if not os.path.exists(p):
            continue
        out[p] = p
        out[os.path.realpath(p)] = os.path.realpath(p)
        if os.path.islink(p):   # bound at its own name, the target's contents
            out[p] = os.path.realpath(p)
    return sorted(out.items(), key=lambda kv: len(kv[0]))


def _host_sockets() -> list[str]:
    """Unix sockets under the system folders the sandbox shows (``_SOCKET_ROOTS``)."""
    now = time.monotonic()
    if _sockets and now - _sockets["at"] < _SOCKET_SCAN_TTL_S:
        return _sockets["found"]
    found: list[str] = []
    seen = [0]

    def walk(d: str, depth: int) -> None:
        if depth < 0 or seen[0] > _SOCKET_SCAN_MAX or d.startswith(_SOCKET_SKIP):
            return
        try:
            it = os.scandir(d)
        except OSError:
            return
        with it:
            for e in it:
                seen[0] += 1
                try:
                    if e.is_dir(follow_symlinks=False):
                        walk(e.path, depth - 1)
                    elif not e.is_file(follow_symlinks=False) and not e.is_symlink() and \
                            stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode) and \
                            "nvidia" not in e.path:
                        found.append(e.path)
                except OSError:
                    continue

    for root, depth in _SOCKET_ROOTS:
        walk(root, depth)
    _sockets.update(at=now, found=found)
    return found


def wrap(argv: list[str], *, chdir: str, writable: list[str], gpu: bool,
         readable: list[str] | None = None) -> list[str]:
    """``argv`` to be run inside the sandbox: ``writable`` folders (created if missing) are
    the only ones it can write to, besides its private ``/dev/shm`` and the empty folders that
    hide the host's homes and temporary folders; ``readable`` ones are bound back read-only."""
    exe = bwrap_path()
    args = _base_args(exe, new_session=has_terminal())
    roots = _hidden_roots()
    for r in roots:
        args += ["--tmpfs", r]
    under = tuple(r + "/" for r in roots)
    for dest, src in _needed(list(readable or [])):
        if (dest + "/").startswith(under) and os.path.isdir(src):
            args += ["--ro-bind", src, dest]
        elif (dest + "/").startswith(under) and os.path.isfile(src):
            args += ["--ro-bind", src, dest]
    for d in _HIDDEN:
        p = os.path.expanduser(d)
        if (os.path.realpath(p) + "/").startswith(under):
            continue   # behind an empty folder already
        if os.path.isdir(p):
            args += ["--tmpfs", p]
        elif os.path.exists(p):
            args += ["--ro-bind", "/dev/null", p]
    for sock in _host_sockets():
        if not (sock + "/").startswith(under):
            args += ["--ro-bind", "/dev/null", sock]
    if gpu:
        for dev in _gpu_devices():
            args += ["--dev-bind", dev, dev]
    for d in dict.fromkeys(os.path.realpath(w) for w in writable):
        os.makedirs(d, exist_ok=True)
        args += ["--bind", d, d]
    args += ["--chdir", chdir, "--"]
    return args + list(argv)
