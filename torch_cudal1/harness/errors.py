"""Turning a candidate's exception into a verdict reason, and compiler logs into short details."""
from __future__ import annotations

import re

_ERROR_LINE = re.compile(r"(\berror\b|error:|Error:|undefined reference|undefined symbol|"
                         r"No such file|fatal)", re.IGNORECASE)
_BUILD_MARKERS = ("Error building extension", "ninja: build stopped", "CalledProcessError",
                  "nvcc", "CompilationError", "triton.compiler", "error: ", "undefined symbol",
                  "ImportError: ", "Ninja is required", "CUDA_HOME")


_DIAG = re.compile(r"(:\d+(:\d+)?: (fatal )?error\b|\(\d+\): error\b|^error\b|^\S*Error: |"
                   r"undefined (reference|symbol))", re.IGNORECASE)
_COMMAND = re.compile(r"(^\[\d+/\d+\]|^FAILED:|\s-o\s|-isystem|^ninja: |^c\+\+ |^nvcc )")


def trim_build_log(text: str, max_lines: int = 12, max_chars: int = 1500) -> str:
    """The first compiler diagnostics of a build log (each with the source line after it), not
    the command lines and the whole log."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    picked: list[str] = []
    for pattern in (_DIAG, _ERROR_LINE):
        for i, ln in enumerate(lines):
            body = ln.split(": ", 1)[1] if ln.startswith(("RuntimeError: ", "CalledProcessError: ")) \
                else ln
            if pattern.search(ln) and not _COMMAND.search(body):
                picked.append(ln.strip())
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                if nxt and not pattern.search(nxt) and not _COMMAND.search(nxt):
                    picked.append("  " + nxt.strip())
            if len(picked) >= max_lines:
                break
        if picked:
            break
    out = "\n".join(dict.fromkeys(picked)) if picked else "\n".join(lines[-max_lines:])
    return out[:max_chars]


def chain_text(e: BaseException) -> str:
    parts, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append(f"{type(e).__name__}: {e}")
        out = getattr(e, "output", None) or getattr(e, "stderr", None)
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        if isinstance(out, str):
            parts.append(out)
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


def classify_exception(e: BaseException) -> tuple[str, str]:
    """(reason, detail) for an exception raised by candidate code."""
    if isinstance(e, SyntaxError):
        return "build_error", f"SyntaxError at line {e.lineno}: {e.msg}"
    return classify_reported(type(e).__name__, chain_text(e), memory=isinstance(e, MemoryError))


def classify_reported(name: str, text: str, memory: bool = False) -> tuple[str, str]:
    """(reason, detail) for an exception known by its type name and text (``chain_text``), as
    the candidate's worker reports it: the judge classifies, the worker only describes."""
    msg = text[len(name) + 2:] if text.startswith(name + ": ") else text
    if memory or name == "MemoryError" or "out of memory" in text or "can't allocate memory" in text \
            or "Cannot allocate memory" in text:
        return "memory", f"{name}: {msg[:600]}"
    if name in ("SyntaxError", "IndentationError", "TabError"):
        return "build_error", f"{name}: {msg[:600]}"
    if any(m in text for m in _BUILD_MARKERS) and (
            name in ("RuntimeError", "CalledProcessError", "ImportError", "OSError",
                     "CompilationError", "CompileTimeAssertionFailure")
            or "Error building extension" in text):
        m = re.search(r"Error building extension '([^']+)'", text)
        head = f"build of {m.group(1)} failed" if m else f"build failed ({name})"
        return "build_error", head + ":\n" + trim_build_log(text)
    if "output of CUDAGraphs that has been overwritten" in text:
        # cudagraph trees (reduce-overhead) hand out their static outputs: the next replay
        # overwrites the previous call's result, which the caller still holds
        return "output_aliased", (f"an earlier call's output was overwritten by a later call "
                                  f"(CUDA-graph static outputs handed out): {name}: {msg[:600]}")
    return "crash", f"{name}: {msg[:800]}"
