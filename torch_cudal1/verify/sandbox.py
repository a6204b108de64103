"""Run-time limits of the verifier's child: memory limit and an audit hook.

The audit hook (PEP 578) is the second line behind ``static.py``: it sees process creation,
sockets, ``ctypes.dlopen`` of libc, file writes, walks of the heap (``gc.get_objects``) and
functions given another body (``f.__code__ = ...``), however the candidate spelled them. Builds are
allowed to run their compilers: a subprocess is allowed when the code that asked for it lives in
an installed library (torch's cpp_extension runs ninja, Triton runs ptxas and cc), never when the
candidate's own file asked for it. A violation ends the child at once with a ``forbidden_call``
verdict written by ``on_violation`` (catching the exception would not help the candidate).
"""
from __future__ import annotations

import os
import sys
import sysconfig
import tempfile

_LIB_ROOTS = tuple({os.path.realpath(p) + os.sep for p in (
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])})
_STDLIB = tuple({os.path.realpath(p) + os.sep for p in (
    sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__))})
_PROC_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                "os.forkpty", "pty.spawn", "os.kill", "os.killpg"}
_NET_EVENTS = {"socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo"}
# Walking the heap finds the reference model and the harness (to change what they compute).
_GC_EVENTS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def set_memory_limit(limit_mb: float | None) -> None:
    """RLIMIT_AS for CPU runs (CUDA maps huge virtual ranges, so GPU runs pass ``None``)."""
    if not limit_mb:
        return
    import resource
    lim = int(limit_mb * 2**20)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        lim = min(lim, hard)
    resource.setrlimit(resource.RLIMIT_AS, (lim, hard))


def _caller_is_library() -> bool:
    """True when the first frame outside the standard library belongs to an installed library
    (site-packages), not to the candidate (whose file lives in the work dir)."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        real = os.path.realpath(fn) if fn.startswith("/") else fn
        if fn.startswith("<frozen") or (real.startswith(_STDLIB) and not real.startswith(_LIB_ROOTS)):
            f = f.f_back
            continue
        return real.startswith(_LIB_ROOTS)
    return False


def install(allowed_write_roots: list[str], on_violation, shared: bool = True) -> None:
    """Install the audit hook. ``on_violation(detail)`` must not return. ``shared``: writes to the
    user's temporary directory and compiler caches (``~/.cache``, ``~/.triton``) are allowed too,
    for the harness's own candidates; code from an engine gets private ones instead."""
    common = [os.path.expanduser("~/.nv"), "/dev/shm"]   # the CUDA driver's JIT cache, shm
    if shared:
        common += [tempfile.gettempdir(), os.path.expanduser("~/.triton"),
                   os.path.expanduser("~/.cache")]
    roots = tuple(os.path.realpath(r) + os.sep for r in allowed_write_roots + common)
    in_hook = [False]

    def hook(event: str, args) -> None:
        if in_hook[0]:
            return
        in_hook[0] = True
        try:
            if event in _PROC_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
                if not _caller_is_library():
                    on_violation(f"{event} {str(args)[:200]}")
            elif event in _NET_EVENTS:
                on_violation(f"{event} {str(args)[:200]}")
            elif event in _GC_EVENTS:
                if not _caller_is_library():
                    on_violation(event)
            elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__":
                # another function's body under its old name: the reference's ops, say
                if not _caller_is_library():
                    on_violation(f"setting {getattr(args[0], '__qualname__', '?')}.__code__")
            elif event == "ctypes.dlopen":
                name = str(args[0] if args else "")
                base = os.path.basename(name)
                if base.startswith(("libc.", "libc-", "libpthread", "libdl")) or name in ("None", ""):
                    if not _caller_is_library():
                        on_violation(f"ctypes.dlopen({name})")
            elif event == "open":
                path, mode, flags = (tuple(args) + (None, None, None))[:3]
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & _WRITE_FLAGS)
                if writes and isinstance(path, (str, bytes)):
                    p = os.path.realpath(os.fsdecode(path))
                    if not (p + os.sep).startswith(roots) and p != "/dev/null":
                        on_violation(f"write to {p}")
            elif event in ("os.remove", "os.rename", "os.rmdir", "shutil.rmtree", "os.chmod"):
                p = os.path.realpath(os.fsdecode(args[0])) if args and isinstance(
                    args[0], (str, bytes)) else ""
                if not (p + os.sep).startswith(roots):
                    on_violation(f"{event} {p}")
        finally:
            in_hook[0] = False

    sys.addaudithook(hook)
