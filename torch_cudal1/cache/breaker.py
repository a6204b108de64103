"""A circuit breaker for a network tier that must never hold up the caller while it is down.

``closed``: calls go through. The first connection-level failure ``trip``s it ``open``: calls are
refused at once (the caller treats the tier as a miss), and a background thread probes the server
with exponential backoff (``BASE_S`` doubling up to ``MAX_S``). The first probe that answers
closes it again. Probes never run on a caller's thread, so a hung server costs a caller at most
the one operation that tripped the breaker. One line is logged when it opens, one when it closes.
"""
from __future__ import annotations

import threading
import time

from ..log import logger

BASE_S = 0.5     # first wait before a probe
MAX_S = 8.0      # longest wait between probes: with a probe's own timeout, a server that answers
                 # again is back in use well within 30 s


class Breaker:
    def __init__(self, name: str, probe, on_close=None, base_s: float = BASE_S,
                 max_s: float = MAX_S):
        """``probe()`` returns True when the server answers (it must bound its own time);
        ``on_close()`` runs (on the prober's thread) right after the breaker closes."""
        self.name = name
        self._probe = probe
        self._on_close = on_close
        self.base_s, self.max_s = float(base_s), float(max_s)
        self._cond = threading.Condition()
        self._open_since: float | None = None
        self.why: str | None = None
        self.opened = 0           # how many times it opened (stats, tests)
        self.closed_count = 0

    @property
    def is_open(self) -> bool:
        return self._open_since is not None

    def trip(self, why: str) -> None:
        """Open the breaker (a no-op when already open) and start probing in the background."""
        with self._cond:
            if self._open_since is not None:
                return
            self._open_since = time.monotonic()
            self.why = why
            self.opened += 1
        logger.warning("%s off: %s; lookups miss and uploads wait until it answers again "
                       "(probed in the background; the local cache keeps working)", self.name, why)
        threading.Thread(target=self._probe_loop, name="cudal1-breaker-probe", daemon=True).start()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the breaker is closed (True) or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._open_since is not None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _probe_loop(self) -> None:
        wait = self.base_s
        while True:
            time.sleep(wait)
            try:
                ok = bool(self._probe())
            except Exception:  # noqa: BLE001 - a failed probe is just "not yet"
                ok = False
            if ok:
                break
            wait = min(wait * 2, self.max_s)
        if self._on_close is not None:
            try:
                self._on_close()
            except Exception:  # noqa: BLE001 - resetting clients must not keep the tier off
                pass
        with self._cond:
            off_s = time.monotonic() - (self._open_since or time.monotonic())
            self._open_since = None
            self.why = None
            self.closed_count += 1
            self._cond.notify_all()
        logger.warning("%s back after %.1f s off; lookups and uploads resume", self.name, off_s)


__all__ = ["BASE_S", "Breaker", "MAX_S"]
