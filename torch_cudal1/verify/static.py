"""Static first filter over a candidate's source: calls that no kernel needs.

It stops the obvious cases before anything runs and gives them a clear reason (`forbidden_call`).
It is only a filter: names can be hidden (getattr, exec, importlib), so the child process enforces
the same rules again at run time through an audit hook (``harness/audit.py``), except raw memory
through ctypes, which raises no audit event: that is refused here only, where it is written out.
"""
from __future__ import annotations

import ast
import threading

# Modules whose import alone means the candidate wants to leave the sandbox.
FORBIDDEN_MODULES = {"subprocess", "socket", "multiprocessing", "pty", "shutil", "http", "urllib",
                     "requests", "httpx", "ftplib", "smtplib", "telnetlib", "pickle", "marshal",
                     "signal", "_signal", "resource"}
# Attribute calls on modules (module, attribute prefix).
FORBIDDEN_CALLS = {
    ("os", "system"), ("os", "popen"), ("os", "fork"), ("os", "forkpty"), ("os", "exec"),
    ("os", "spawn"), ("os", "posix_spawn"), ("os", "kill"), ("os", "killpg"), ("os", "remove"),
    ("os", "unlink"), ("os", "rmdir"), ("os", "removedirs"), ("os", "rename"), ("os", "replace"),
    ("os", "chmod"), ("os", "chdir"), ("os", "_exit"), ("os", "abort"), ("sys", "exit"),
    ("sys", "settrace"), ("sys", "setprofile"), ("sys", "addaudithook"), ("sys", "_getframe"),
    ("gc", "get_objects"), ("gc", "get_referrers"), ("importlib", "reload"),
    ("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "getouterframes"),
}
FORBIDDEN_BUILTINS = {"exec", "eval", "compile", "__import__", "breakpoint", "exit", "quit"}
LIBC_NAMES = ("libc", "libpthread", "libdl")
# ctypes' ways to memory at a raw address or an object from its address (a pointer made of an
# integer, a union punning one, a function pointer called at an address, Python's C API). CPython
# raises no audit event for most of them, so the worker's hook cannot name them at run time; no
# kernel needs them (``ctypes.c_void_p()`` and ``byref`` for a library's out-parameter stay
# allowed). ``c_char_p``/``c_wchar_p`` read at an address when given an integer: allowed with a
# written-out string only.
RAW_CTYPES = frozenset({
    "cast", "pointer", "POINTER", "py_object", "memmove", "memset", "addressof", "string_at",
    "wstring_at", "CFUNCTYPE", "PYFUNCTYPE", "CFuncPtr", "pythonapi", "pydll", "PyDLL", "Union",
    "LittleEndianUnion", "BigEndianUnion", "_Pointer", "_SimpleCData", "_CFuncPtr", "_CData",
    "c_char_p", "c_wchar_p", "_cast", "_memmove_addr", "_memset_addr", "_cast_addr",
    "_string_at_addr", "_wstring_at_addr", "PyObj_FromPtr"})
# Attribute names that reach memory at an address (a ctypes type's ``from_address``, an array
# interface that numpy or torch turns into a view of any address) or objects no kernel touches
# (every class of the process, a function's closure cells and globals: the worker's own).
# Refused as attributes and as strings (``getattr(x, "__closure__")``, ``vars(t)["..."]``).
RAW_ATTRS = frozenset({
    "from_address", "from_buffer", "from_buffer_copy", "__subclasses__", "__closure__",
    "cell_contents", "__globals__", "__array_interface__", "__cuda_array_interface__",
    "__array_struct__"})
_CTYPES_MODULES = ("ctypes", "_ctypes")
_TEXT_ONLY = ("c_char_p", "c_wchar_p")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _const_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


# CPython 3.11's parser is not safe to call from several threads at once ("AST constructor
# recursion depth mismatch"); the search checks a round's candidates from parallel threads.
_PARSE_LOCK = threading.Lock()


def check_source(source: str) -> tuple[str, str]:
    """Return (reason, detail): ("ok", "") or ("forbidden_call" | "build_error", what and where)."""
    try:
        with _PARSE_LOCK:
            tree = ast.parse(source)
    except SyntaxError as e:
        return "build_error", f"SyntaxError at line {e.lineno}: {e.msg}"
    reason, detail = _check_tree(tree)
    return ("ok", "") if reason else ("forbidden_call", detail)


def _check_tree(tree: ast.AST) -> tuple[bool, str]:
    aliases: dict[str, str] = {}   # local name -> module it refers to ("sp" -> "subprocess")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if root in FORBIDDEN_MODULES:
                    return False, f"line {node.lineno}: import of {a.name}"
                aliases[a.asname or root] = a.name if a.asname else root
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                return False, f"line {node.lineno}: relative import"
            mod = (node.module or "").split(".")[0]
            if mod in FORBIDDEN_MODULES:
                return False, f"line {node.lineno}: import from {node.module}"
            for a in node.names:
                if mod == "_ctypes" or (mod == "ctypes" and a.name == "*") or (
                        mod == "ctypes" and a.name in RAW_CTYPES and a.name not in _TEXT_ONLY):
                    return False, (f"line {node.lineno}: import of {mod}.{a.name}, memory at "
                                   "a raw address")
                if (mod, a.name) in FORBIDDEN_CALLS or any(
                        mod == m and a.name.startswith(p) for m, p in FORBIDDEN_CALLS):
                    return False, f"line {node.lineno}: import of {mod}.{a.name}"
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    raw = _raw_memory(tree, aliases)
    if raw:
        return False, raw
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if not name:
            continue
        head, _, rest = name.partition(".")
        full = aliases.get(head, head) + ("." + rest if rest else "")
        if "." not in full and full in FORBIDDEN_BUILTINS:
            return False, f"line {node.lineno}: call of {full}()"
        mod, _, attr = full.rpartition(".")
        if any(mod == m and attr.startswith(p) for m, p in FORBIDDEN_CALLS):
            return False, f"line {node.lineno}: call of {full}()"
        # ctypes.CDLL("libc.so.6") / ctypes.cdll.LoadLibrary(...) / ctypes.util.find_library("c")
        if full.startswith("ctypes.") and any(k in full for k in ("CDLL", "LoadLibrary", "PyDLL",
                                                                   "find_library")):
            arg = _const_str(node.args[0]) if node.args else None
            if arg is None or arg == "c" or any(arg.startswith(n) for n in LIBC_NAMES):
                return False, f"line {node.lineno}: {full}({arg!r}) loads a system library"
        if full.startswith("ctypes.cdll.") or full.startswith("ctypes.CDLL"):
            continue
        if full in ("open", "io.open", "builtins.open"):
            mode = _const_str(node.args[1]) if len(node.args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = _const_str(kw.value) or "?"
            path = _const_str(node.args[0]) if node.args else None
            if mode and any(c in mode for c in "wax+?") and (
                    path is None or path.startswith(("/", "~", "..")) or "/.." in path):
                return False, f"line {node.lineno}: open({path!r}, {mode!r}) writes outside the work dir"
    return True, ""


def _is_ctypes(node: ast.AST, aliases: dict[str, str]) -> bool:
    """``node`` names the ctypes module, however reached (``ctypes``, an alias, ``torch.ctypes``,
    ``_ctypes``)."""
    name = _dotted(node)
    if not name:
        return False
    head, _, rest = name.partition(".")
    full = aliases.get(head, head) + ("." + rest if rest else "")
    return full.rpartition(".")[2] in _CTYPES_MODULES


def _text_call(node: ast.AST, parents: dict) -> bool:
    """``node`` is the function of a call whose arguments are written-out strings."""
    call = parents.get(id(node))
    return (isinstance(call, ast.Call) and call.func is node and not call.keywords
            and all(isinstance(a, ast.Constant) and isinstance(a.value, (str, bytes))
                    for a in call.args))


def _raw_memory(tree: ast.AST, aliases: dict[str, str]) -> str:
    """Where the source reaches memory at a raw address or an object from its address through
    Python ('' where it does not). Native code the candidate compiles can too: that is judged by
    what it does, not here."""
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "_ctypes":
                    return f"{where}: import of _ctypes, memory at a raw address"
        elif isinstance(node, ast.Attribute):
            if node.attr in RAW_ATTRS:
                return f"{where}: .{node.attr}, memory at a raw address or the worker's objects"
            if node.attr in RAW_CTYPES and _is_ctypes(node.value, aliases) and not (
                    node.attr in _TEXT_ONLY and _text_call(node, parents)):
                return f"{where}: ctypes.{node.attr}, memory at a raw address"
        elif isinstance(node, (ast.Name, ast.FunctionDef)) and getattr(
                node, "id", getattr(node, "name", "")) in RAW_ATTRS:
            # a class's own array interface (``__array_interface__ = {"data": (addr, ...)}``)
            return f"{where}: {getattr(node, 'id', getattr(node, 'name', ''))} defined"
        elif isinstance(node, ast.Name):
            origin = aliases.get(node.id, "")
            mod, _, attr = origin.rpartition(".")
            if mod in _CTYPES_MODULES and attr in _TEXT_ONLY and not _text_call(node, parents):
                return f"{where}: {origin}, memory at a raw address"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in RAW_ATTRS or (node.value in RAW_CTYPES
                                           and _in_getattr_of_ctypes(node, parents, aliases)):
                return f"{where}: the name {node.value!r}, memory at a raw address"
        elif isinstance(node, ast.Call) and _dotted(node.func) in (
                "getattr", "setattr", "hasattr", "delattr") and node.args and _is_ctypes(
                node.args[0], aliases) and (len(node.args) < 2 or not isinstance(
                node.args[1], ast.Constant)):
            return f"{where}: a name of ctypes not written out"
    return ""


def _in_getattr_of_ctypes(node: ast.AST, parents: dict, aliases: dict[str, str]) -> bool:
    call = parents.get(id(node))
    return (isinstance(call, ast.Call) and _dotted(call.func) in ("getattr", "hasattr")
            and len(call.args) > 1 and call.args[1] is node and _is_ctypes(call.args[0], aliases))
