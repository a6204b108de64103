"""Static first filter over a candidate's source: calls that no kernel needs.

It stops the obvious cases before anything runs and gives them a clear reason (`forbidden_call`).
It is only a filter: names can be hidden (getattr, exec, importlib), so the child process enforces
the same rules again at run time through an audit hook (see ``sandbox.py``).
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
                if (mod, a.name) in FORBIDDEN_CALLS or any(
                        mod == m and a.name.startswith(p) for m, p in FORBIDDEN_CALLS):
                    return False, f"line {node.lineno}: import of {mod}.{a.name}"
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
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
