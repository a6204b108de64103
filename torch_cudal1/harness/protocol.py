"""The judge <-> worker protocol: framed JSON messages over two pipes, outputs in shared memory.

The judge (``verify/judge.py``) never runs candidate code; the worker (``harness/worker.py``)
runs nothing else, save a few batches of the reference before the candidate is imported, where
the judge asks (``calibrate`` in the setup: it times the worker's harness on them). They share:

* two pipes: requests to the worker, replies to the judge. A message is an 8-byte little-endian
  length and that many bytes of JSON. The worker's process is the candidate's, so every reply is
  untrusted data: the judge bounds its size, parses it strictly and takes nothing in it as a
  verdict;
* one shared-memory file (``memfd``) of output slots: call ``i`` of a batch copies its outputs,
  the moment it returns, into slot ``i`` (each output at a fixed, aligned offset, in logical
  order), where the judge reads them itself.
"""
from __future__ import annotations

import json
import os
import select
import time

MAX_MESSAGE = 64 << 20       # bytes; a longer reply is a protocol violation
ALIGN = 64                   # bytes; every output starts at a multiple of this in its slot


class ProtocolError(Exception):
    """The other side sent something that is not a message, or hung up."""


class Timeout(Exception):
    """No message within the time allowed."""


def send(fd: int, obj) -> None:
    data = json.dumps(obj, default=str).encode()
    buf = len(data).to_bytes(8, "little") + data
    view = memoryview(buf)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise Timeout(f"no reply within the time allowed ({got} of {n} bytes)")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ProtocolError("the other side closed the pipe")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv(fd: int, timeout_s: float | None = None):
    """The next message; ``Timeout`` after ``timeout_s`` seconds, ``ProtocolError`` on EOF or a
    malformed message."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    n = int.from_bytes(_read_exact(fd, 8, deadline), "little")
    if n > MAX_MESSAGE:
        raise ProtocolError(f"a message of {n} bytes (at most {MAX_MESSAGE})")
    try:
        return json.loads(_read_exact(fd, n, deadline))
    except ValueError as e:
        raise ProtocolError(f"not JSON: {e}") from None


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def layout(specs: list[dict]) -> tuple[list[int], int]:
    """Offsets of the outputs described by ``specs`` ({"shape", "dtype"} per tensor output, None
    for others) within one slot, and the slot's size."""
    offsets, pos = [], 0
    for s in specs:
        offsets.append(pos)
        if s is not None:
            pos += aligned(s["nbytes"])
    return offsets, max(pos, ALIGN)
