"""The judge <-> worker protocol: framed JSON messages over two pipes, outputs in shared memory.

The judge (``verify/judge.py``) never runs candidate code; the worker (``harness/worker.py``)
runs nothing else, save a few batches of the reference before the candidate is imported, where
the judge asks (``calibrate`` in the setup: it times the worker's harness on them). They share:

* two pipes: requests to the worker, replies to the judge. A message is an 8-byte little-endian
  length, a 32-byte tag and that many bytes of JSON. The worker's process is the candidate's, so
  every reply is untrusted data: the judge bounds its size, parses it strictly and takes nothing
  in it as a verdict. Its facts must at least come from the harness: a reply's tag is a keyed
  BLAKE2b of the reply and its number in the sequence (``Signer``), under a key the judge sends
  in the setup, before any candidate code is imported, and the worker keeps out of the
  candidate's reach (only through its own frame). Candidate code holds the reply pipe's number
  all the same: it could write a reply of its own there (``os.write`` raises no audit event),
  or put its own pipe in the harness's place (``os.dup2``), but not tag one, and a real reply
  held back and sent later carries the wrong number. The judge's requests after the setup are
  tagged the same way (another person string), so that none is rewritten on its way in;
* one shared-memory file (``memfd``) of output slots: call ``i`` of a batch copies its outputs,
  the moment it returns, into slot ``i`` (each output at a fixed, aligned offset, in logical
  order), where the judge reads them itself.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import select
import time

MAX_MESSAGE = 64 << 20       # bytes; a longer reply is a protocol violation
ALIGN = 64                   # bytes; every output starts at a multiple of this in its slot
TAG_BYTES = 32
# Bound when the module is imported, before any candidate code runs: replacing
# ``hashlib.blake2b``, ``json.loads``, ``os.read`` and the rest later (for as long as one
# request takes to arrive: its seeds, read early, tell the inputs) leaves the harness's own.
_blake2b = hashlib.blake2b
_dumps, _loads = json.dumps, json.loads
_read, _write, _select = os.read, os.write, select.select
_compare, _monotonic = hmac.compare_digest, time.monotonic


class ProtocolError(Exception):
    """The other side sent something that is not a message, or hung up."""


class Forged(ProtocolError):
    """A reply whose tag is not the harness's."""


class Timeout(Exception):
    """No message within the time allowed."""


class Signer:
    """Tags or checks one direction's messages, in order: the worker's replies (``b"reply"``)
    and the judge's requests after the setup (``b"request"``), which candidate code could
    otherwise rewrite on their way in (``os.dup2`` on the request pipe)."""

    def __init__(self, key: bytes, direction: bytes = b"reply"):
        self.key, self.direction, self.count = key, direction, 0

    def tag(self, data: bytes) -> bytes:
        self.count += 1
        return _blake2b(self.count.to_bytes(8, "little") + data, key=self.key,
                        person=self.direction, digest_size=TAG_BYTES).digest()


def _encode(obj) -> str:
    """``obj`` as JSON. The worker puts a private copy of json's encoder here before the
    candidate's import (``worker._serve``): ``json.dumps`` looks up ``JSONEncoder`` and its
    methods as it runs, and a reply re-encoded by candidate code, its facts edited, would be
    tagged as the harness's own."""
    return _dumps(obj, default=str)


def send(fd: int, obj, signer: Signer | None = None) -> None:
    """Send ``obj``; tagged where a ``signer`` is given, else with an empty tag (the setup,
    which carries the key; the audit hook's report of a violation, which only ever rejects)."""
    data = _encode(obj).encode()
    tag = signer.tag(data) if signer is not None else bytes(TAG_BYTES)
    buf = len(data).to_bytes(8, "little") + tag + data
    view = memoryview(buf)
    while view:
        n = _write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - _monotonic()
            if left <= 0 or not _select([fd], [], [], left)[0]:
                raise Timeout(f"no reply within the time allowed ({got} of {n} bytes)")
        chunk = _read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ProtocolError("the other side closed the pipe")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv(fd: int, timeout_s: float | None = None, signer: Signer | None = None):
    """The next message; ``Timeout`` after ``timeout_s`` seconds, ``ProtocolError`` on EOF or a
    malformed message. With a ``signer``, a message whose tag is not the next one's is
    ``Forged``, unless it reports a violation (which can only reject its sender)."""
    deadline = None if timeout_s is None else _monotonic() + timeout_s
    n = int.from_bytes(_read_exact(fd, 8, deadline), "little")
    if n > MAX_MESSAGE:
        raise ProtocolError(f"a message of {n} bytes (at most {MAX_MESSAGE})")
    tag = _read_exact(fd, TAG_BYTES, deadline)
    data = _read_exact(fd, n, deadline)
    try:
        obj = _loads(data)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {e}") from None
    if signer is not None and not _compare(signer.tag(data), tag):
        if isinstance(obj, dict) and set(obj) == {"violation"}:
            return obj
        raise Forged(f"a {signer.direction.decode()} the verifier did not write (its tag does "
                     "not match)")
    return obj


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
