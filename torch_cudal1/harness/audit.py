"""An audit hook in the candidate's worker: attempts named, inside the OS sandbox.

The operating system's sandbox (``verify/os_sandbox.py``) is the boundary: whatever the candidate
tries, it has no network, writes only its own folders and its processes die with it. The audit
hook (PEP 578) is a second line that gives an attempt a name (``forbidden_call``) where Python
code makes it: process creation, sockets, C functions reached through ``ctypes`` (``system``,
``fork``, ``socket``, ``link``, ...), changes to files outside its folders (writes, hard and
symbolic links, truncation, new folders), walks of the heap (``gc.get_objects``), frames taken
by its own code (``sys._getframe``, a traceback's ``tb_frame``, trace functions), Python's C API
or raw addresses through ``ctypes``, functions given another body (``f.__code__ = ...``,
``__defaults__``), and code made under a library's file name (``code.replace``, ``compile``,
``marshal``, a ``.pyc`` without its source), however the candidate spelled them: they lead to
the harness's objects in the worker, whose facts about each call the judge reads. Code made of
C functions only has no frame of its own: every thread but the harness loop's counts as the
candidate's at the bottom of its stack, and in the loop's thread an event goes only to code that
names what it called. The hook runs from a private copy of this module (``install``). Only what
raises an event can be named:
CPython 3.11 raises none for a call through a ctypes function pointer (``ctypes.cast``,
``memmove``, ``memset``, a ``CFUNCTYPE`` of an address) or for a pointer or ``py_object`` read
out of a ``Union`` or a buffer, so raw memory reached that way passes this hook. Builds may run
their compilers: a subprocess is allowed when the code that asked for it lives in an installed
library (torch's cpp_extension runs ninja, Triton runs ptxas and cc), never when the candidate's
own file asked. A violation ends the worker at once (``on_violation``). ``CUDAL1_AUDIT=0`` leaves
it out (the sandbox tests use that, to show the OS boundary holds on its own).
"""
from __future__ import annotations

import _thread
import functools
import marshal
import os
import sys
import sysconfig
import tempfile
import types

_LIB_ROOTS = tuple({os.path.realpath(p) + os.sep for p in (
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])})
_STDLIB = tuple({os.path.realpath(p) + os.sep for p in (
    sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__))})
_PROC_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                          "os.spawn", "os.fork", "os.forkpty", "pty.spawn", "os.kill",
                          "os.killpg"})
_NET_EVENTS = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
                         "socket.getaddrinfo", "socket.gethostbyname", "socket.__new__"})
# Walking the heap finds the reference model and the harness (to change what they compute).
_GC_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
_EXEC_PREFIXES = ("os.exec", "os.spawn")
# Frames lead to the harness's objects in this process (the runner whose facts the judge reads,
# the guards' snapshot): the candidate's own code may not take one. Every way to a frame object
# passes one of these events (``f_back``, ``f_locals`` only work on a frame already taken).
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys._getframemodulename",
                           "sys.settrace", "sys.setprofile"})
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# What reaches another thread's frames (the harness's loop runs in a thread of its own,
# candidate_thread.py), or runs a function in every thread: refused to any code with the
# candidate's code under it, a library's included.
_ALL_THREADS = frozenset({"sys._current_frames", "sys._current_exceptions",
                          "sys._settraceallthreads", "sys._setprofileallthreads",
                          "sys.monitoring.register_callback"})
# standard-library functions that hand frames to their caller (others, like logging's and
# warnings' look at the caller's name, take one and keep it)
_FRAME_GIVERS = frozenset({"currentframe", "stack", "trace", "getouterframes",
                           "getinnerframes", "walk_stack", "walk_tb", "set_trace",
                           "<lambda>"})   # logging.currentframe
# Trace and profile functions are handed every frame of their thread: whoever asked for one,
# through any standard-library code (bdb's set_trace, threading.settrace's hook run when a
# thread starts), is judged, not the standard-library code that made the call.
_TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
# what code that reads memory at a raw address calls (the events name none of them)
_RAW_NAMES = frozenset({"from_address", "from_buffer", "from_buffer_copy", "in_dll", "string_at",
                        "wstring_at", "PyObj_FromPtr", "cast"})
# Events that make code objects out of text or bytes, under whatever file name those carry
_CODE_EVENTS = frozenset({"compile", "marshal.loads", "marshal.load"})
# attributes that give a function another behaviour under its old name
_FUNC_BODY = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_HARNESS_ROOT = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
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


def _caller_is_library(depth: int = 2, names=None, via_stdlib: bool = True, frame=None) -> bool:
    """True when the first frame outside the standard library belongs to an installed library
    (site-packages), not to the candidate (whose file lives in the work dir). With ``names``
    (what the audited function is called), that library frame must also call it by one of them
    or by the standard-library function it called (``_named_by``): else it ran a callable the
    candidate handed it, and the candidate's code asked. ``via_stdlib=False``: names are asked
    for only where the library's frame raised the event itself; through standard-library code
    the call may be implicit (a ``NamedTuple`` class statement runs ``namedtuple``, which sets
    ``__defaults__``) and names nothing. ``frame``: the frame that raised the event, where
    ``depth`` does not lead to it."""
    f, callee = (frame if frame is not None else _frame_at(depth)), None
    while f is not None:
        fn = f.f_code.co_filename
        real = os.path.realpath(fn) if fn.startswith("/") else fn
        if fn.startswith("<frozen") or (real.startswith(_STDLIB) and not real.startswith(_LIB_ROOTS)):
            f, callee = f.f_back, f
            continue
        if not real.startswith(_LIB_ROOTS):
            return False
        if names is None or (callee is not None and not via_stdlib):
            return True
        return _named_by(f, names, callee) or not _candidate_below(f)
    return False


def _named_by(f, names, callee=None) -> bool:
    """Whether the code of frame ``f`` names what it called: one of ``names`` (the audited
    function), or the standard-library function ``callee`` it called (``inspect.stack``,
    ``Popen.__init__``), among its global and attribute names or its string constants
    (``getattr(sys, "_getframe")``). A library function that runs a callable it was handed
    (``torch.utils._pytree.tree_map(sys._getframe, ...)``, ``map``, a callback) names none:
    the call is the code's that handed it over."""
    want = set(names)
    if callee is not None:
        want.add(callee.f_code.co_name)
        want.update(getattr(callee.f_code, "co_qualname", "").split("."))
    code = f.f_code
    return bool(want.intersection(code.co_names)) or bool(want.intersection(_strings(code.co_consts)))


def _strings(consts) -> set:
    """The string constants of a code object, those in its tuples and frozensets of names
    (``for attr in ("__defaults__", ...)``) included."""
    out = set()
    for c in consts:
        if isinstance(c, str):
            out.add(c)
        elif isinstance(c, (tuple, frozenset)):
            out |= _strings(c)
    return out


# The worker's own thread: its loop's, set by ``install``. Every other thread runs the candidate's
# code or was started by it (or by a library it called), and its stack may hold no frame of the
# candidate's where its code is made of C functions only (``functools.partial`` of ``map``, run
# as a thread, a finaliser or a module's hook that torch calls): reaching the bottom of such a
# thread's stack counts as reaching the candidate's code. (The job thread runs the harness's own
# jobs too, whose code names what it calls.)
_OWN_THREADS: tuple = ()


def _frame_at(depth: int):
    """The frame ``depth`` levels up from the caller of this function (``sys._getframe(depth)``
    there), or None where the stack is not that deep: a thread of C functions only has no frame
    under the audit hook's."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None


def _foreign_thread() -> bool:
    return bool(_OWN_THREADS) and _thread.get_ident() not in _OWN_THREADS


def _asked_by_name(f, event: str, args) -> bool:
    """Whether ``f``, the frame that called what raised ``event``, is a library's, the standard
    library's or the harness's code that names it. A callable of the candidate's made of C
    functions only (``functools.partial`` of ``map``), run as a finaliser or a weakref's callback
    where the harness lets an object go, has no frame of its own: its events come from whatever
    frame the harness was in, which names nothing of the kind."""
    if f is None or _where(f.f_code) == "candidate":
        return False
    name = args[1] if event == "object.__getattr__" and len(args) > 1 else event.rpartition(".")[2]
    return _named_by(f, {name})


def _candidate_below(f) -> bool:
    """Whether the candidate's code is on the stack under frame ``f`` (or the stack is a thread's
    that the worker did not start): only then could it have handed a library the callable that
    raised the event."""
    f = f.f_back
    while f is not None:
        if _where(f.f_code) == "candidate":
            return True
        f = f.f_back
    return _foreign_thread()


def _decode(name) -> str:
    """A file name as text (``os.fsdecode`` without the Python-level helpers it looks up)."""
    return name if isinstance(name, str) else bytes(name).decode(_FS_ENCODING, "surrogateescape")


_FS_ENCODING = sys.getfilesystemencoding()


def _where(code) -> str:
    """'stdlib', 'library' (installed packages, this package) or 'candidate' for a code object."""
    return _where_file(code.co_filename)


def _where_file_uncached(fn: str) -> str:
    """``_where`` by file name, kept: the hook walks whole stacks on events the harness's own
    thread raises every call, and resolving each file's real path is a system call per part."""
    if fn.startswith("<frozen"):
        return "stdlib"
    if not fn.startswith("/"):
        return "candidate"   # exec'd text: the candidate's (libraries' generated code is in files)
    real = os.path.realpath(fn)
    if real.startswith(_LIB_ROOTS) or real.startswith(_HARNESS_ROOT):
        return "library"
    return "stdlib" if real.startswith(_STDLIB) else "candidate"


_where_file = functools.lru_cache(maxsize=8192)(_where_file_uncached)


def _named_outside(obj) -> str | None:
    """The first file name, among the code objects in what ``marshal`` loaded (nested in code
    or in containers, at any depth), that ``_where`` does not count as the candidate's."""
    todo, seen = [obj], set()
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if type(o) is type(_named_outside.__code__):
            if _where_file(o.co_filename) != "candidate":
                return o.co_filename
            todo += o.co_consts
        elif isinstance(o, dict):
            todo += list(o.keys()) + list(o.values())
        elif isinstance(o, (tuple, list, set, frozenset)):
            todo += list(o)
    return None


def _trusted_path(path) -> str | None:
    """The real path of ``path`` where it is under a library's, the standard library's or the
    harness's folder (none of which the candidate may write), else None."""
    if isinstance(path, bytes):
        path = _decode(path)
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    real = os.path.realpath(path)
    if real.startswith(_LIB_ROOTS) or real.startswith(_STDLIB) or real.startswith(_HARNESS_ROOT):
        return real
    return None


def _trusted_file_holds(path, data, skip: int = 0) -> bool:
    """Whether ``path`` is a trusted file (``_trusted_path``) that holds ``data`` from byte
    ``skip`` on."""
    real = _trusted_path(path)
    if real is None:
        return False
    if isinstance(data, str):
        data = data.encode()
    try:
        with open(real, "rb") as f:
            return f.read()[skip:] == bytes(data)
    except (OSError, TypeError, ValueError):
        return False


def _one_line_of(path: str, text) -> bool:
    """Whether ``text`` is part of one line of a trusted file (``_trusted_path``)."""
    real = _trusted_path(path)
    if isinstance(text, str):
        text = text.encode()
    if real is None or not isinstance(text, bytes) or b"\n" in text:
        return False
    try:
        with open(real, "rb") as f:
            return any(text in line for line in f)
    except OSError:
        return False


def _code_named_elsewhere(event: str, args, caller) -> str:
    """Why code that ``compile`` or ``marshal`` makes, with the candidate's code on the stack (or
    in a thread that counts as the candidate's), is refused ('' where it may be made). The hook tells a library's code from the candidate's by
    the file name a code object carries, and text or bytes can carry any: code under a
    library's, the standard library's or the harness's file name is made only from that very
    file (the import system reading a library's source or its cached bytecode), or where a
    library compiles text it names itself. ``caller``: the frame that called ``compile`` or
    ``marshal``."""
    if event == "marshal.load":   # from a file object: the bytes are not in the event
        return "marshal.load: code read from a file object, under whatever file name it carries"
    if event == "compile":
        source, name = (tuple(args) + (None, None))[:2]
        if not isinstance(name, (str, bytes)) or _where_file(_decode(name)) == "candidate":
            return ""
        name = _decode(name)
        if isinstance(source, (str, bytes)) and _trusted_file_holds(name, source):
            return ""
        if caller is not None and _caller_is_library(names={"compile"}, frame=caller):
            return ""
        if caller is not None and caller.f_code.co_name == "invoke_excepthook" \
                and _where(caller.f_code) == "stdlib" and _one_line_of(name, source):
            return ""   # a thread's uncaught exception printed: its carets parse a line's part
        return (f"compile: code under the file name {name[:200]}, which is not the candidate's, "
                "from text that is not that file's")
    data = args[0] if args else b""
    code = caller.f_code if caller is not None else None
    if code is not None and code.co_filename.startswith("<frozen importlib") \
            and code.co_name == "_compile_bytecode" \
            and _trusted_file_holds(caller.f_locals.get("bytecode_path"), data, skip=16):
        return ""   # a library's cached or sourceless module: its bytecode file's own bytes
    try:
        name = _named_outside(marshal.loads(data))
    except Exception:  # noqa: BLE001 - not code: the call itself fails or makes none
        return ""
    if name is None:
        return ""
    return (f"marshal.loads: code under the file name {name[:200]}, which is not the "
            "candidate's, from bytes that no library's file holds")


def _frame_taken_by_candidate(event: str = "", attr: str = "") -> bool:
    """The code that raised the event (or, for a standard-library function that hands frames
    back, the code that called it) is the candidate's; or a library's that does not name what
    it called (``_named_by``: it ran a callable the candidate handed it)."""
    f = _frame_at(2)   # _frame_taken_by_candidate <- hook <- the code that raised the event
    if f is None:   # no frame at all: a thread of C functions only
        return _foreign_thread()
    names = {attr} if attr else {event.rpartition(".")[2]}
    if event in _TRACE_EVENTS:
        callee = None
        while f is not None and _where(f.f_code) == "stdlib":
            f, callee = f.f_back, f
        if f is None or _where(f.f_code) == "candidate":
            return True   # no library asked for it
        return not _named_by(f, names, callee) and _candidate_below(f)
    where = _where(f.f_code)
    if where == "stdlib" and f.f_code.co_name in _FRAME_GIVERS:
        callee, g = f, f.f_back
        while g is not None and _where(g.f_code) == "stdlib" and g.f_code.co_name in _FRAME_GIVERS:
            callee, g = g, g.f_back
        if g is None:
            return _foreign_thread()
        if _where(g.f_code) == "stdlib":
            return False
        return _where(g.f_code) == "candidate" or (
            not _named_by(g, names, callee) and _candidate_below(g))
    if where == "library":
        return not _named_by(f, names) and _candidate_below(f)
    return where == "candidate"


def _path(arg) -> str | None:
    if isinstance(arg, int) and arg >= 0:   # a file descriptor (os.truncate on an fd, say)
        try:
            return os.readlink(f"/proc/self/fd/{arg}")
        except OSError:
            return None
    if isinstance(arg, (str, bytes, os.PathLike)):
        return os.path.realpath(_decode(arg))
    return None


# Events that change the file system: which of their arguments name what is changed.
_FS_EVENTS = types.MappingProxyType({
    "os.remove": (0,), "os.rename": (0, 1), "os.rmdir": (0,), "shutil.rmtree": (0,),
    "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,), "os.mkdir": (0,),
    "os.symlink": (1,), "os.link": (0, 1), "os.truncate": (0,),
    "os.setxattr": (0,), "os.removexattr": (0,), "shutil.move": (0, 1),
    "shutil.copyfile": (1,), "shutil.copytree": (1,), "os.mkfifo": (0,),
    "os.mknod": (0,)})
# C functions a candidate could reach through ctypes to leave its process's rules behind.
_LIBC_DANGER = frozenset({"system", "popen", "fork", "vfork", "clone", "clone3", "daemon",
                          "setsid", "execv", "execve", "execvp", "execvpe", "execl", "execle",
                          "execlp", "fexecve",
                          "posix_spawn", "posix_spawnp", "kill", "killpg", "socket", "connect",
                          "bind", "sendto", "sendmsg", "send", "syscall", "unlink", "unlinkat",
                          "link", "linkat", "symlink", "symlinkat", "truncate", "ftruncate",
                          "mkdir", "mkdirat", "rename", "renameat", "open", "open64", "openat",
                          "creat", "fopen", "ptrace", "dlopen", "mprotect", "process_vm_writev",
                          "prctl", "unshare", "setns", "mount", "chroot",
                          # any other symbol by name or address, raw memory, the process's heap
                          # policy
                          "dlsym", "dlvsym", "dladdr", "dladdr1", "dlmopen", "__libc_dlsym",
                          "__libc_dlopen_mode", "memcpy", "memmove", "memset", "bcopy", "mmap",
                          "mmap64", "munmap", "mremap", "madvise", "mallopt", "malloc_trim", "dup2",
                          "dup3"})


_DLADDR: tuple = ()


def _bind_dladdr() -> None:
    """libc's dladdr, bound before the hook is installed (its own calls then raise nothing
    the hook judges)."""
    global _DLADDR
    try:
        import ctypes

        class _Info(ctypes.Structure):
            _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                        ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]
        fn = ctypes.CDLL(None).dladdr
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_Info)]
        _DLADDR = (fn, _Info, ctypes.byref)
    except Exception:  # noqa: BLE001 - no dladdr: calls are judged by name at lookup only
        _DLADDR = ()


def _bare(name: str) -> str:
    """A libc symbol without the prefixes of its internal aliases (``__libc_fork``, ``__socket``
    are ``fork``, ``socket``)."""
    return name.removeprefix("__libc_").lstrip("_") if name.startswith("__") else name


def _symbol_at(addr) -> str:
    """The exported symbol at address ``addr`` ('' where none is known)."""
    if not _DLADDR or not isinstance(addr, int):
        return ""
    fn, info_t, byref = _DLADDR
    info = info_t()
    if not fn(addr, byref(info)) or not info.sname or info.saddr != addr:
        return ""
    return info.sname.decode(errors="replace")


def code_of(module) -> list:
    """Every code object of ``module``'s functions and classes, nested ones included: the task's
    own code, which the harness's thread runs (its ``get_inputs``) and which is not the
    candidate's although it lives beside it."""
    out, todo, seen = [], [], set()
    for v in vars(module).values():
        if isinstance(v, type) and v.__module__ == module.__name__:
            todo += [getattr(m, "__func__", m) for m in vars(v).values()]
        else:
            todo.append(v)
    codes = [getattr(f, "__code__", None) for f in todo]
    while codes:
        c = codes.pop()
        if type(c) is not type(code_of.__code__) or id(c) in seen:
            continue
        seen.add(id(c))
        out.append(c)
        codes += list(c.co_consts)
    return out


def install(*args, **kwargs) -> None:
    """Install the audit hook (``_install``, which takes these arguments) from a private copy
    of this module (``guards.private``): the hook's rules, the helpers it calls, the builtins and
    ``os.path``'s functions are this moment's. Rebinding a name of this module, of ``os.path``
    or of another module through ``sys.modules`` for the length of a call
    (``audit._where = lambda code: "library"``, to take frames the hook would refuse, then put
    back) changes nothing the hook runs (``hook_rules_rebound.py``)."""
    import posixpath

    from . import guards
    ns = guards.private(guards.module(__name__))
    ns["os"].__dict__["path"] = types.SimpleNamespace(**guards.private(posixpath))
    ns["_install"](*args, **kwargs)


def _install(allowed_write_roots: list[str], on_violation, shared: bool = True,
             harness_thread: int | None = None, trusted_code=(), harness_code=()) -> None:
    """Install the audit hook. ``on_violation(detail)`` must not return. ``shared``: writes to the
    user's temporary directory and compiler caches (``~/.cache``, ``~/.triton``) are allowed too,
    for the harness's own candidates; code from an engine gets private ones instead.
    ``harness_thread``: the thread of the harness's loop (``threading.get_ident``), where no
    candidate code runs but what the harness's own work sets off (a finaliser, a gc callback):
    there, code with the candidate's under it may take no frame and walk no heap at all.
    ``trusted_code``: code objects that are not the candidate's there (``code_of`` the task).
    There, an event of those is judged by the frame that raised it too: it must name what it
    called (``_asked_by_name``) or be one of ``harness_code``, the harness's own code that takes
    frames in that thread (the check that the candidate's thread is back in its loop).
    Threads other than ``harness_thread`` count as the candidate's (``_OWN_THREADS``)."""
    global _OWN_THREADS, _where_file
    get_ident = _thread.get_ident
    if harness_thread is not None:
        _OWN_THREADS = (harness_thread,)
    _where_file = functools.lru_cache(maxsize=8192)(_where_file_uncached)   # over this copy's
    trusted = frozenset(id(c) for c in trusted_code)   # alive while the task module is
    own_code = frozenset(id(c) for c in harness_code)   # alive while the harness's modules are

    def candidate_here(f) -> bool:
        """Candidate code on this stack, under ``f`` (the task's own code aside), or a thread
        the worker did not start."""
        f = f.f_back
        while f is not None:
            if id(f.f_code) not in trusted and _where(f.f_code) == "candidate":
                return True
            f = f.f_back
        return _foreign_thread()
    common = [os.path.expanduser("~/.nv"), "/dev/shm"]   # the CUDA driver's JIT cache, shm
    if shared:
        common += [tempfile.gettempdir(), os.path.expanduser("~/.triton"),
                   os.path.expanduser("~/.cache")]
    roots = tuple(os.path.realpath(r) + os.sep for r in allowed_write_roots + common)
    in_hook = [False]
    # Events the hook judges; everything else (frame attribute reads fire ``object.__getattr__``
    # dozens of times per call of a model) returns at the first line.
    _bind_dladdr()
    watched = frozenset(_PROC_EVENTS | _NET_EVENTS | _GC_EVENTS | set(_FS_EVENTS) | _FRAME_EVENTS |
                        _ALL_THREADS | _CODE_EVENTS | {"code.__new__"} | {
        "object.__setattr__", "object.__getattr__", "ctypes.dlsym", "ctypes.dlopen", "open",
        "ctypes.call_function", "ctypes.PyObj_FromPtr",
        "ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at"})

    def hook(event: str, args) -> None:
        if in_hook[0] or (event not in watched and not event.startswith(_EXEC_PREFIXES)):
            return
        if event == "object.__getattr__" and (len(args) < 2 or args[1] not in _FRAME_ATTRS):
            return   # fired for every f_code read: the common case returns here
        in_hook[0] = True
        try:
            harness_here = get_ident() == harness_thread
            if event in _ALL_THREADS or (harness_here and (
                    event in _FRAME_EVENTS or event in _GC_EVENTS or event == "object.__getattr__")):
                caller = _frame_at(1)
                if candidate_here(sys._getframe(0)) or (harness_here and (
                        caller is None or (id(caller.f_code) not in own_code
                                           and not _asked_by_name(caller, event, args)))):
                    on_violation(f"{event}: another thread's frames, or the harness's thread's, "
                                 "are out of the candidate's reach")
            elif event == "code.__new__":
                # code under a library's, the standard library's or the harness's file name is
                # judged as theirs (``_where``): the candidate may not make code so named
                # (``compile`` of any text is refused by the static check)
                name = args[1] if len(args) > 1 else None
                if isinstance(name, (str, bytes)) and _where_file(_decode(name)) != "candidate" \
                        and not _caller_is_library(names={"replace", "CodeType"}):
                    on_violation(f"{event}: code under the file name {_decode(name)[:200]}, "
                                 "which is not the candidate's")
            elif event in _CODE_EVENTS:
                if candidate_here(sys._getframe(0)):
                    why = _code_named_elsewhere(event, args, _frame_at(1))
                    if why:
                        on_violation(why)
            elif harness_here and (event in _PROC_EVENTS or event in _NET_EVENTS
                                   or event.startswith(_EXEC_PREFIXES)):
                # the harness's loop starts no process and opens no socket once the hook is in:
                # one from its thread comes from a finaliser or callback of the candidate's,
                # made of C functions only where no frame of it shows
                on_violation(f"{event} in the harness's thread {str(args)[:200]}")
            elif event in _PROC_EVENTS or event.startswith(_EXEC_PREFIXES):
                if not _caller_is_library(names={event.rpartition(".")[2]}):
                    on_violation(f"{event} {str(args)[:200]}")
            elif event == "socket.__new__":
                if not _caller_is_library(names={"socket", "create_connection"}):
                    on_violation(f"{event} {str(args)[:200]}")
            elif event in _NET_EVENTS:
                on_violation(f"{event} {str(args)[:200]}")
            elif event in _GC_EVENTS:
                if not _caller_is_library(names={event.rpartition(".")[2]}, via_stdlib=False):
                    on_violation(event)
            elif event == "object.__setattr__" and len(args) > 1 and args[1] in _FUNC_BODY:
                # another function's body under its old name: the reference's ops, say
                if not _caller_is_library(names={args[1], "setattr", "__setattr__"},
                                          via_stdlib=False):
                    on_violation(f"setting {getattr(args[0], '__qualname__', '?')}.{args[1]}")
            elif event in _FRAME_EVENTS or event == "object.__getattr__":
                what = args[1] if event == "object.__getattr__" else event
                if _frame_taken_by_candidate(event, args[1] if event == "object.__getattr__"
                                             else ""):
                    on_violation(f"frame introspection ({what}): the harness's objects are out "
                                 "of the candidate's reach")
            elif event in ("ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at",
                           "ctypes.PyObj_FromPtr"):
                # memory read or typed at a raw address, an object from its address: any object
                # of this process, the harness's
                if not _caller_is_library(names=_RAW_NAMES):
                    on_violation(f"{event}: memory at a raw address")
            elif event == "ctypes.dlsym":
                name = args[1] if len(args) > 1 else ""
                name = _bare(name.decode(errors="replace") if isinstance(name, bytes)
                             else str(name))
                if (name in _LIBC_DANGER or name.startswith(("Py", "_Py"))) \
                        and not _caller_is_library():
                    # Python's own C API reaches every object and frame of the process
                    on_violation(f"ctypes: the C function {name}")
            elif event == "ctypes.call_function":
                # _ctypes.call_function(address, args), judged by the symbol it lands on (3.11
                # raises this event for that function only, not for calls of CFUNCTYPE objects)
                name = _bare(_symbol_at(args[0])) if args else ""
                if (name in _LIBC_DANGER or name.startswith(("Py", "_Py"))) \
                        and not _caller_is_library():
                    on_violation(f"ctypes: a call of the C function {name}")
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
                    p = os.path.realpath(_decode(path))
                    if not (p + os.sep).startswith(roots) and p != "/dev/null":
                        on_violation(f"write to {p}")
            elif event in _FS_EVENTS:
                for i in _FS_EVENTS[event]:
                    p = _path(args[i]) if len(args) > i else None
                    if p is None or not (p + os.sep).startswith(roots):
                        on_violation(f"{event} {p or args[i] if len(args) > i else ''}")
        finally:
            in_hook[0] = False

    sys.addaudithook(hook)
    _guard_signals(on_violation)


def _guard_signals(on_violation) -> None:
    """Signal handlers set by the candidate's code are refused: the interpreter hands a Python
    handler the frame it interrupted, with no audit event, and a signal the candidate raises in
    its own call interrupts a frame whose ``f_back`` is the harness's. Both ``signal.signal`` and
    the C module's ``_signal.signal`` are replaced before its import; handlers already set are
    in the guards' snapshot (``guards.hooks``)."""
    import _signal
    import signal
    real = _signal.signal

    def guarded(signalnum, handler):
        if not _caller_is_library(2, names={"signal"}, via_stdlib=False):
            on_violation(f"signal.signal({signalnum}, ...): a signal handler is handed the "
                         "interrupted frame, and through it the harness's")
        return real(signalnum, handler)

    _signal.signal = guarded
    signal.signal = guarded
