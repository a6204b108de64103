"""Files a sandboxed process could write, read from outside the sandbox.

Candidate code may write its own folders, so a file the host later reads there by name (its
log, its result) may by then be a symbolic link to a file the sandbox could not read (the
user's keys), a device that never ends (``/dev/zero``) or a pipe that never answers. The host
reads such files through the descriptor it opened before the child ran (the link replaces the
name, not the file), or opens them without following a link, only if they are regular files,
and never more than a bound.
"""
from __future__ import annotations

import os
import stat

RESULT_LIMIT = 64 << 20


def tail(fd: int | None, n: int = 1500) -> str:
    """The last ``n`` bytes written through descriptor ``fd`` (the host's own, of the file it
    gave the child as its output), as text; "" where there is none."""
    if fd is None:
        return ""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - n)
        data = os.pread(fd, size - start, start)
    except OSError:
        return ""
    return data.decode(errors="replace").strip()


def is_regular(path) -> bool:
    """Whether ``path`` itself (not what a link there points to) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_regular(path, limit: int = RESULT_LIMIT) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, opened without
    following a symbolic link in its last part and without waiting on a pipe; OSError else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise OSError(f"{path} holds {st.st_size} bytes (more than {limit})")
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > limit:   # grown since it was looked at
            raise OSError(f"{path} holds more than {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_text(path, limit: int = RESULT_LIMIT) -> str:
    return read_regular(path, limit).decode(errors="replace")
