"""The operating-system sandbox around every process that runs candidate code (bubblewrap).

A candidate's worker (``harness/worker.py``) is started as ``bwrap ... python -m ...`` with:

* every namespace new (``--unshare-all``): no network (not even the host's loopback), its own
  process tree (when its first process ends, the kernel kills every process left in it, a
  ``setsid`` one too), its own IPC and host name;
* no capabilities (``--cap-drop ALL``), so it cannot remount what it was given read-only;
* the host's file system read-only (``/tmp`` too: its ``TMPDIR`` is a folder of its own), a
  private ``/dev/shm``, and read-write only the folders it is given (its work folder, its build
  folder, compiler caches); well-known folders of credentials hidden behind empty ones;
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
import subprocess
import threading

from ..log import logger
from ..options import env

_ALLOW = {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "PYTHONPATH",
          "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS",
          "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
          "CUDAL1_TIMING_CPUS", "CUDAL1_NATIVE", "CUDAL1_AUDIT"}
_ALLOW_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TORCH_", "TORCHINDUCTOR_", "TRITON_", "CUPY_",
                   "NCCL_")
# Variables under an allowed prefix that can still hold a credential.
_DENY_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL")
_HIDDEN = ("~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker",
           "~/.netrc", "~/.git-credentials", "~/.pypirc", "~/.config/gh")

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


def _base_args(exe: str) -> list[str]:
    return [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
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


def wrap(argv: list[str], *, chdir: str, writable: list[str], gpu: bool) -> list[str]:
    """``argv`` to be run inside the sandbox: ``writable`` folders (created if missing) are
    the only ones it can write to, besides its private ``/dev/shm``."""
    exe = bwrap_path()
    args = _base_args(exe)
    for d in _HIDDEN:
        p = os.path.expanduser(d)
        if os.path.isdir(p):
            args += ["--tmpfs", p]
        elif os.path.exists(p):
            args += ["--ro-bind", "/dev/null", p]
    if gpu:
        for dev in _gpu_devices():
            args += ["--dev-bind", dev, dev]
    for d in dict.fromkeys(os.path.realpath(w) for w in writable):
        os.makedirs(d, exist_ok=True)
        args += ["--bind", d, d]
    args += ["--chdir", chdir, "--"]
    return args + list(argv)
