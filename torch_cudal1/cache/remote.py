"""The remote cache tier: entries as content-addressed blobs in Redis, plus a small index.

Layout in the Redis database named by the URL (``redis://host:6379/0``)::

    cudal1:blob:<sha256>  -> tar.gz of one entry directory (deterministic: same entry, same bytes)
    cudal1:index:<key>    -> JSON {"blob": <sha256>, "size": n, "created": t, "host": ..., ...}

A blob is written before the index that names it, so a reader that finds an index finds its blob
(or a miss, if Redis evicted it). Nothing read from here is taken on faith: the blob's hash is
checked against the index, and the unpacked entry goes through the local store's checks
(``tiered.TieredStore``) before it is installed. Those checks catch damage, not forgery: whoever
can write to the server can write a self-consistent entry. With a shared ``remote_secret`` every
index carries an HMAC of (key, blob hash), and entries without a valid one are rejected.

The tier is shared by every store of one process (``tier_for``) and no compile ever fails because
of it. A server that stops answering trips a circuit breaker (``breaker.Breaker``): lookups miss
at once, uploads stay queued, one line says the tier is off; a background probe closes it again
when the server answers (one line), and the queued uploads go out. Only what cannot heal (no
``redis`` package, a malformed URL) disables the tier for the process. Writes run on one
background thread; ``flush`` waits for them (the process's exit waits too, bounded, and not at
all while the breaker is open).
"""
from __future__ import annotations

import atexit
import collections
import gzip
import hashlib
import hmac
import io
import json
import socket
import tarfile
import threading
import time
from pathlib import Path

from ..log import logger

PREFIX = "cudal1"
MAX_ENTRY_BYTES = 2 << 30        # refuse to unpack more than this (a blob is untrusted input)
EXIT_FLUSH_S = 30.0              # how long the process's exit waits for pending pushes


def blob_name(digest: str) -> str:
    return f"{PREFIX}:blob:{digest}"


def index_name(key: str) -> str:
    return f"{PREFIX}:index:{key}"


class BadBlob(Exception):
    """A remote blob that must not be installed (hash mismatch, unsafe or unreadable archive)."""


# -- packing --------------------------------------------------------------------------------------
def pack(directory: Path) -> bytes:
    """A deterministic tar.gz of ``directory`` (sorted names, zeroed times and owners), so that the
    same entry always gives the same blob and its sha256 names it."""
    directory = Path(directory)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=6) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for p in sorted(directory.rglob("*")):
                if p.is_symlink() or p.name.endswith(".lock") or not (p.is_file() or p.is_dir()):
                    continue
                info = tar.gettarinfo(str(p), arcname=p.relative_to(directory).as_posix())
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                info.mode = 0o755 if p.is_dir() or info.mode & 0o100 else 0o644
                if p.is_file():
                    with open(p, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return buf.getvalue()


def unpack(blob: bytes, dest: Path) -> None:
    """Extract ``blob`` into the (empty) directory ``dest``: plain files and directories only,
    every name inside ``dest``, bounded size (``archive``)."""
    from .archive import UnsafeArchive, extract, plain_members
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            extract(tar, plain_members(tar, max_bytes=MAX_ENTRY_BYTES), Path(dest))
    except UnsafeArchive as e:
        raise BadBlob(str(e)) from None
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise BadBlob(f"unreadable archive ({type(e).__name__}: {e})") from None


def _redis_errors():
    import redis
    # Connection-level failures disable the tier; other server errors fail one operation only.
    return ((redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
             redis.exceptions.AuthenticationError, OSError),
            redis.exceptions.RedisError)


class RemoteTier:
    """One Redis server, as this process sees it. Use ``tier_for(url)`` to share it."""

    MAX_QUEUED = 1000     # uploads kept while the server is off; beyond that the oldest are dropped

    def __init__(self, url: str, timeout_s: float = 5.0, secret: str | None = None):
        from .breaker import Breaker
        self.url = url
        self.timeout_s = float(timeout_s)
        self._secret = secret.encode() if secret else None
        self.disabled: str | None = None   # why, once disabled for good (cannot heal)
        self._client = None
        self._lock = threading.Lock()
        self._queue: collections.deque = collections.deque()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._rejected: set = set()        # (key, blob sha256) refused once: not fetched again
        self.breaker = Breaker(f"remote cache {redact_url(url)}", self._probe, self._reset_client)
        self.stats = {"pushed": 0, "push_failed": 0, "fetched": 0, "rejected": 0, "dropped": 0}

    # -- state ----------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        """True when lookups and uploads may go to the server now."""
        return self.disabled is None and not self.breaker.is_open

    def disable(self, why: str) -> None:
        """Turn the tier off for good (a missing package, a malformed URL); warns once."""
        with self._lock:
            if self.disabled is not None:
                return
            self.disabled = why
            self._idle.notify_all()
        logger.warning("remote cache %s disabled for this process: %s (the local cache keeps "
                       "working)", redact_url(self.url), why)

    def _new_client(self):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
        # No client-side retries: remote_timeout_s is the whole bound of one operation.
        return redis.Redis.from_url(self.url, socket_connect_timeout=self.timeout_s,
                                    socket_timeout=self.timeout_s, retry=Retry(NoBackoff(), 0))

    def client(self):
        if self._client is None:
            try:
                import redis  # noqa: F401
            except ImportError:
                self.disable("the 'redis' package is not installed (pip install 'torch_cudal1[redis]'"
                             " or pip install redis)")
                raise ConnectionError(self.disabled) from None
            try:
                self._client = self._new_client()
            except ValueError as e:
                self.disable(f"invalid URL ({e})")
                raise ConnectionError(self.disabled) from None
        return self._client

    def _probe(self) -> bool:
        """Does the server answer a PING now? (The breaker's background probe; its own client,
        so that no connection of the serving path is touched.)"""
        probe = self._new_client()
        try:
            return bool(probe.ping())
        finally:
            probe.close()

    def _reset_client(self) -> None:
        # Connections of the pool may have died with the server (or hold a half-read answer):
        # start from fresh ones once it is back.
        old, self._client = self._client, None
        if old is not None:
            try:
                old.close()
            except Exception:  # noqa: BLE001 - closing a dead connection
                pass

    def _call(self, what: str, fn):
        """Run ``fn(client)``; None on failure (the breaker tripped, or one warning)."""
        if not self.enabled:
            return None
        try:
            client = self.client()
            fatal, other = _redis_errors()
            try:
                return fn(client)
            except fatal as e:
                self.breaker.trip(f"{what} failed: {type(e).__name__}: {e}")
            except other as e:
                logger.warning("remote cache %s: %s failed: %s", redact_url(self.url), what, e)
        except ConnectionError:   # no client (redis missing, bad URL): disabled with its reason
            pass
        return None

    # -- reading ------------------------------------------------------------------------------
    def index(self, key: str) -> dict | None:
        raw = self._call(f"reading the index of {key}", lambda c: c.get(index_name(key)))
        if raw is None:
            return None
        try:
            info = json.loads(raw)
            if not isinstance(info, dict) or not isinstance(info.get("blob"), str):
                raise ValueError("no blob hash")
            return info
        except ValueError as e:
            logger.warning("remote cache: index of %s is unreadable (%s); ignored", key, e)
            return None

    @property
    def signs(self) -> bool:
        """Whether this tier signs uploads and refuses unsigned entries (``remote_secret``)."""
        return self._secret is not None

    def has(self, key: str) -> bool:
        """Whether the server holds an index for ``key`` (nothing is fetched)."""
        return self.index(key) is not None

    def fetch(self, key: str) -> tuple[bytes, dict] | None:
        """The blob of ``key`` whose sha256 matches its index, or None (miss or rejected). A blob
        rejected once (here or after install) is not fetched again by this process."""
        info = self.index(key)
        if info is None or (key, info["blob"]) in self._rejected:
            return None
        blob = self._call(f"reading the blob of {key}", lambda c: c.get(blob_name(info["blob"])))
        if blob is None:
            return None
        if hashlib.sha256(blob).hexdigest() != info["blob"]:
            self.reject(key, "blob content does not match its sha256", info["blob"])
            return None
        if self._secret is not None and not hmac.compare_digest(
                str(info.get("sig", "")), self._sign(key, info["blob"])):
            self.reject(key, "not signed with this remote_secret", info["blob"])
            return None
        self.stats["fetched"] += 1
        return blob, info

    def _sign(self, key: str, digest: str) -> str:
        return hmac.new(self._secret, f"{key}:{digest}".encode(), hashlib.sha256).hexdigest()

    def reject(self, key: str, why: str, digest: str | None = None) -> None:
        """Refuse the blob ``digest`` of ``key`` for the rest of the process, with one warning."""
        if digest is not None:
            if (key, digest) in self._rejected:
                return
            self._rejected.add((key, digest))
        self.stats["rejected"] += 1
        logger.warning("remote cache entry %s rejected (%s); not installed, searching instead",
                       key, why)

    def forget(self, key: str, digest: str) -> None:
        """Do not offer the blob ``digest`` of ``key`` again in this process (it was refused after
        install, and said so)."""
        self._rejected.add((key, digest))

    def keys(self) -> list[str]:
        prefix = index_name("")
        got = self._call("listing the index", lambda c: [
            (k.decode() if isinstance(k, bytes) else k)[len(prefix):]
            for k in c.scan_iter(match=prefix + "*", count=500)])
        return sorted(got or [])

    # -- writing ------------------------------------------------------------------------------
    def put(self, key: str, blob: bytes, info: dict | None = None) -> bool:
        """Store ``blob`` for ``key`` now (blob first, then the index that names it)."""
        digest = hashlib.sha256(blob).hexdigest()
        index = dict(info or {}, blob=digest, size=len(blob), created=time.time(),
                     host=socket.gethostname())
        if self._secret is not None:
            index["sig"] = self._sign(key, digest)

        def write(c):
            c.set(blob_name(digest), blob, nx=True)   # content-addressed: an equal blob is kept
            c.set(index_name(key), json.dumps(index, sort_keys=True))
            return True
        ok = bool(self._call(f"writing {key}", write))
        self.stats["pushed" if ok else "push_failed"] += 1
        return ok

    def push(self, key: str, directory: Path, info: dict | None = None) -> None:
        """Queue ``directory`` (a committed, immutable entry) for upload; returns at once. While
        the breaker is open the upload waits in the queue (bounded) for the server to answer."""
        if self.disabled is not None:
            return
        with self._lock:
            if len(self._queue) >= self.MAX_QUEUED:
                self._queue.popleft()
                self._pending -= 1
                self.stats["dropped"] += 1
            self._queue.append((key, Path(directory), info))
            self._pending += 1
            self._idle.notify_all()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="cudal1-remote-push",
                                                daemon=True)
                self._thread.start()

    def _next(self):
        with self._lock:
            while not self._queue:
                self._idle.wait()
            return self._queue.popleft()     # still counted in _pending until _done

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1
            self._idle.notify_all()

    def _run(self) -> None:
        while True:
            key, directory, info = self._next()
            try:
                blob = pack(directory)
            except Exception as e:  # noqa: BLE001 - an entry removed meanwhile, a full disk...
                self.stats["push_failed"] += 1
                logger.warning("remote cache: could not upload %s (%s: %s)", key,
                               type(e).__name__, e)
                self._done()
                continue
            while self.disabled is None:
                self.breaker.wait_closed()
                if self.put(key, blob, info) or not self.breaker.is_open:
                    break           # uploaded, or refused by the server for this entry only
            self._done()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued push is done; True when none is left. Returns False at once
        while the breaker is open (the server is off: the uploads wait for it) or on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._pending:
                if self.disabled is not None or self.breaker.is_open:
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(0.2 if left is None else min(left, 0.2))
        return True

    @property
    def pending(self) -> int:
        return self._pending


def redact_url(url: str) -> str:
    """The URL without a password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


_TIERS: dict = {}
_TIERS_LOCK = threading.Lock()


def tier_for(url: str, timeout_s: float = 5.0, secret: str | None = None) -> RemoteTier:
    """The process's one tier for ``url`` (so that disabling it and its warning happen once)."""
    with _TIERS_LOCK:
        name = (url, hashlib.sha256(secret.encode()).hexdigest() if secret else None)
        tier = _TIERS.get(name)
        if tier is None:
            tier = _TIERS[name] = RemoteTier(url, timeout_s, secret)
        return tier


def flush_all(timeout: float | None = None) -> bool:
    with _TIERS_LOCK:
        tiers = list(_TIERS.values())
    return all([t.flush(timeout) for t in tiers])


@atexit.register
def _flush_at_exit() -> None:
    # Pushes run on a daemon thread: give them a bounded chance to finish before the process ends
    # (none while the server is off: waiting for it would only delay the exit).
    if _TIERS and not flush_all(EXIT_FLUSH_S):
        with _TIERS_LOCK:
            left = sum(t.pending for t in _TIERS.values())
        logger.warning("remote cache: exiting with %d upload(s) not done; they are lost (the "
                       "local cache has the entries)", left)


__all__ = ["BadBlob", "RemoteTier", "blob_name", "flush_all", "index_name", "pack", "redact_url",
           "tier_for", "unpack"]
