"""One device, many processes: timings never overlap other processes' work on the same device.

Several searches, warm workers or benchmark jobs may share one GPU. Their builds and
verifications may run side by side, but a timing must see the device alone, or its numbers are
another process's. A readers-writer lock per physical device (``fcntl.flock`` on a file under
``CUDAL1_DEVICE_LOCK_DIR``, default ``<tmp>/cudal1-device-locks-<uid>``) does that: a
verification holds it shared while it uses the device, a timing holds it exclusive. A turnstile
lock in front gives the writer preference, so a timing waits for the verifications in flight to
finish, never for a stream of new ones. ``CUDAL1_DEVICE_LOCK=0`` turns it off; any OS error turns
it off for the process rather than failing the work (the lock is about fair numbers, never about
correctness). Only the device's work is serialised: builds and CPU load still overlap a timing.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time

from ..options import env, env_off


def lock_dir() -> str | None:
    if env_off("CUDAL1_DEVICE_LOCK"):
        return None
    return env("CUDAL1_DEVICE_LOCK_DIR") or os.path.join(
        tempfile.gettempdir(), f"cudal1-device-locks-{os.getuid()}")


def device_id(device: str) -> str:
    """A name for the physical device, the same in every process whatever its
    CUDA_VISIBLE_DEVICES: the GPU's UUID where torch reports it."""
    dev = str(device)
    if not dev.startswith("cuda"):
        return "cpu"
    import torch
    try:
        props = torch.cuda.get_device_properties(torch.device(dev))
        uuid = str(getattr(props, "uuid", "") or "")
        if uuid:
            return "gpu-" + uuid.replace("/", "_")
        idx = torch.device(dev).index or 0
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return "gpu-" + (visible.split(",")[idx] if visible else str(idx))
    except Exception:  # noqa: BLE001 - no name, no lock
        return ""


class LockTimeout(Exception):
    """The lock was not had before the holder's ``deadline``."""


class DeviceLock:
    """Readers-writer lock over one device, across processes; re-entrant inside the process
    (a shared request while this process holds it exclusively is a no-op). ``deadline`` (a
    ``time.monotonic()`` value; none by default): a wait that would pass it raises
    ``LockTimeout``, so a verifier waiting for another process's timing keeps its own limit."""

    deadline: float | None = None

    def __init__(self, device: str, directory: str | None = None):
        self._fds: tuple[int, int] | None = None
        self._exclusive = 0
        self._shared = 0
        self._suspended = 0   # the depth of a shared hold let go of by suspend()
        self._owner = 0       # the thread holding it shared
        self.waited_s = 0.0   # time spent waiting for other processes (a contention measure)
        self._mu = threading.RLock()
        directory = directory if directory is not None else lock_dir()
        name = device_id(device) if directory else ""
        if not (directory and name):
            return
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            base = os.path.join(directory, name)
            self._fds = (os.open(base + ".turnstile", os.O_RDWR | os.O_CREAT, 0o600),
                         os.open(base + ".lock", os.O_RDWR | os.O_CREAT, 0o600))
        except OSError:
            self._fds = None

    @property
    def active(self) -> bool:
        return self._fds is not None

    def _flock(self, fd: int, op: int) -> bool:
        try:
            if self.deadline is None or op == fcntl.LOCK_UN:
                fcntl.flock(fd, op)
                return True
            while True:
                try:
                    fcntl.flock(fd, op | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    if time.monotonic() >= self.deadline:
                        raise LockTimeout("the device was held by another process's timing "
                                          "until this one's limit") from None
                    time.sleep(0.02)
        except OSError:
            self._fds = None
            return False

    @contextlib.contextmanager
    def _again(self, depth: str):
        """A nested hold of what this process already holds: only the depth changes."""
        setattr(self, depth, getattr(self, depth) + 1)
        try:
            yield
        finally:
            setattr(self, depth, getattr(self, depth) - 1)

    @contextlib.contextmanager
    def shared(self):
        fds = self._fds
        if fds is None or self._exclusive:
            yield
            return
        turnstile, rw = fds
        with self._mu:   # threads of one process share one open file: serialise them here
            if self._shared:   # nested: never back through the turnstile (a waiting writer
                with self._again("_shared"):   # holds it, and waits for this very lock)
                    yield
                return
            t0 = time.monotonic()
            try:
                if self._flock(turnstile, fcntl.LOCK_EX):
                    try:
                        self._flock(rw, fcntl.LOCK_SH)
                    finally:
                        self._flock(turnstile, fcntl.LOCK_UN)
            finally:
                self.waited_s += time.monotonic() - t0
            # inside a suspended hold (a benchmark during a compile) the outer hold stays
            # suspended, for resume() to take back
            outer = self._suspended
            self._shared, self._owner = 1, threading.get_ident()
            try:
                yield
            finally:
                self._shared, self._suspended = 0, outer
                if self._fds is not None:
                    self._flock(rw, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self):
        fds = self._fds
        if fds is None:
            yield
            return
        turnstile, rw = fds
        with self._mu:
            if self._exclusive:
                with self._again("_exclusive"):
                    yield
                return
            t0 = time.monotonic()
            try:
                held = self._flock(turnstile, fcntl.LOCK_EX)
                try:
                    held = held and self._flock(rw, fcntl.LOCK_EX)
                except LockTimeout:
                    self._flock(turnstile, fcntl.LOCK_UN)
                    raise
            finally:
                self.waited_s += time.monotonic() - t0
            self._exclusive = 1
            try:
                yield
            finally:
                self._exclusive = 0
                if held and self._fds is not None:
                    self._flock(rw, fcntl.LOCK_UN)
                    self._flock(turnstile, fcntl.LOCK_UN)

    def suspend(self) -> None:
        """Let go of a shared hold for a while (``resume`` takes it back): for stretches inside
        a verification that do no device work, such as a compile.
        Only the thread holding it, only a shared hold: an exclusive one is a timing's."""
        if self._fds is None or self._exclusive or not self._shared or self._suspended:
            return
        if self._owner != threading.get_ident():   # another thread's hold is not ours to drop
            return
        self._suspended, self._shared = self._shared, 0
        self._flock(self._fds[1], fcntl.LOCK_UN)

    def resume(self) -> None:
        """Take a suspended shared hold back, through the turnstile (a timing that came meanwhile
        goes first)."""
        if not self._suspended or self._owner != threading.get_ident():
            return
        depth, self._suspended = self._suspended, 0
        fds = self._fds
        t0 = time.monotonic()
        if fds is not None and self._flock(fds[0], fcntl.LOCK_EX):
            self._flock(fds[1], fcntl.LOCK_SH)
            self._flock(fds[0], fcntl.LOCK_UN)
        self.waited_s += time.monotonic() - t0
        self._shared = depth

    def close(self) -> None:
        fds, self._fds = self._fds, None
        for fd in fds or ():
            with contextlib.suppress(OSError):
                os.close(fd)
