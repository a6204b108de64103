"""Immutable cache entries on disk, shared by many processes.

An entry is a directory ``entries/<key>/`` holding ``meta.json`` (key fields, fingerprint,
timings, verdicts, every round's provenance and a manifest of file hashes), ``winner.py``,
``task.py`` (+ ``inputs.safetensors``), ``vectors.safetensors`` (test vectors) and ``artifacts/``
(built extensions). It is written under a temporary name and renamed into place, so readers see
a whole entry or none; a directory whose manifest does not match is quarantined, never served.
"""
from __future__ import annotations

import json
import os
import socket
import shutil
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from ..file_hash import sha256_of
from ..procutil import pid_alive

from ..version import CACHE_FORMAT

META = "meta.json"
WINNER = "winner.py"
ARTIFACTS = "artifacts"
VECTORS = "vectors.safetensors"
# Staging dirs are named KEY.PID.RANDOM@HOST so that a later process can tell whose they are.
HOST = socket.gethostname().replace("/", "_")
STALE_FOREIGN_S = 24 * 3600.0   # staging dirs of other hosts (shared filesystems) expire by age


def manifest(directory: Path) -> dict:
    files = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file() and p.name != META and not p.name.endswith(".lock"):
            files[p.relative_to(directory).as_posix()] = sha256_of(p)
    return files


@dataclass
class CacheEntry:
    key: str
    path: Path
    meta: dict
    source: str = "local"     # "remote" when this lookup installed it from the remote tier
    prepared: object = None   # the winner's forward, when the process that stored it built it

    @property
    def foreign(self) -> dict | None:
        """Where an entry made on another machine came from (a bundle, the remote tier), or None
        for one made here. Set by whoever installed it, never taken from the entry's producer."""
        got = self.meta.get("imported")
        return got if isinstance(got, dict) and got else None

    @property
    def artifacts_trusted(self) -> bool:
        """Whether inductor's artefacts (``artifacts/inductor-cache.bin``: pickles, code once
        loaded) may be handed to inductor: for entries made here, or signed with this machine's
        ``remote_secret``. Another machine's unsigned entry is checked by running its winner,
        which says nothing of what unpickling its artefacts would do; its winner compiles."""
        f = self.foreign
        return f is None or f.get("signed") is True

    @property
    def winner_source(self) -> str:
        return (self.path / WINNER).read_text()

    @property
    def artifacts(self) -> Path:
        return self.path / ARTIFACTS

    @property
    def winner_origin(self) -> str:
        return self.meta.get("winner", {}).get("origin", "?")


class CorruptEntry(Exception):
    pass


class CacheDirError(OSError):
    """The cache directory cannot be created or written (one line for the user)."""


class CacheStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser() / f"v{CACHE_FORMAT}"
        self.entries = self.root / "entries"
        self.locks = self.root / "locks"
        self.quarantine_dir = self.root / "quarantine"
        self.tmp = self.root / "tmp"
        self.usage = self.root / "usage"
        self.graphs = self.root / "graphs"

    def _ensure(self) -> None:
        try:
            for d in (self.entries, self.locks, self.tmp):
                d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CacheDirError(f"cache dir {self.root.parent} cannot be written "
                                f"({e.strerror or type(e).__name__}: {e.filename or e}); "
                                "set --cache-dir or CUDAL1_CACHE_DIR to a writable "
                                "directory") from None

    def ensure_writable(self) -> None:
        """Create the store's directories and check that a file can be written there; raise
        CacheDirError (one line) when not."""
        self._ensure()
        probe = self.tmp / f".probe.{os.getpid()}.{uuid.uuid4().hex[:6]}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise CacheDirError(f"cache dir {self.root.parent} cannot be written "
                                f"({e.strerror or type(e).__name__}); set --cache-dir or "
                                "CUDAL1_CACHE_DIR to a writable directory") from None

    def entry_path(self, key: str) -> Path:
        return self.entries / key

    # -- reading ---------------------------------------------------------------------------
    def load(self, key: str, *, check: bool = True) -> CacheEntry | None:
        """The entry for ``key``, or None. A corrupt entry is quarantined and reported as None."""
        path = self.entry_path(key)
        if not path.is_dir():
            return None
        try:
            return self._read(key, path, check)
        except CorruptEntry as e:
            self.quarantine(key, str(e))
            return None

    def _read(self, key: str, path: Path, check: bool) -> CacheEntry:
        try:
            meta = json.loads((path / META).read_text())
        except (OSError, ValueError) as e:
            raise CorruptEntry(f"unreadable {META}: {e}") from None
        if meta.get("key") != key or meta.get("format") != CACHE_FORMAT:
            raise CorruptEntry("key or format mismatch")
        if check:
            want = meta.get("manifest")
            if not isinstance(want, dict) or WINNER not in want:
                raise CorruptEntry("no manifest")
            got = manifest(path)
            if got != want:
                bad = sorted(set(got.items()) ^ set(want.items()))
                raise CorruptEntry(f"content hash mismatch ({bad[0][0] if bad else '?'})")
        return CacheEntry(key, path, meta)

    def problem(self, key: str) -> str | None:
        """Why ``key``'s entry would be refused (unreadable, tampered), without moving it; None
        when it is sound. For listings: ``load`` quarantines what this finds."""
        try:
            self._read(key, self.entry_path(key), True)
            return None
        except CorruptEntry as e:
            return str(e)

    def quarantine(self, key: str, why: str, quiet: bool = False) -> None:
        """Move the entry out of the way (kept, with why, under ``quarantine/``); it is a miss
        from now on. ``quiet``: the caller has said why already."""
        src = self.entry_path(key)
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        dst = self.quarantine_dir / f"{key}-{int(time.time())}-{uuid.uuid4().hex[:6]}"
        try:
            os.rename(src, dst)
            (dst / "QUARANTINED").write_text(why + "\n")
        except OSError:
            shutil.rmtree(src, ignore_errors=True)
        if not quiet:
            from ..log import logger
            logger.warning("cache entry %s was corrupt (%s); quarantined and will be rebuilt", key,
                           why)

    def keys(self) -> list[str]:
        if not self.entries.is_dir():
            return []
        return sorted(p.name for p in self.entries.iterdir() if p.is_dir() and not p.name.startswith("."))

    def last_used(self, key: str) -> float:
        """When ``key`` was last served (or created), for LRU pruning."""
        for p in (self.usage / key, self.entry_path(key) / META):
            try:
                return p.stat().st_mtime
            except OSError:
                continue
        return 0.0

    def touch(self, key: str) -> None:
        """Record a use of ``key`` (best effort: a read-only cache is still usable)."""
        try:
            self.usage.mkdir(parents=True, exist_ok=True)
            (self.usage / key).touch()
        except OSError:
            pass

    def size(self, key: str) -> int:
        return sum(p.stat().st_size for p in self.entry_path(key).rglob("*") if p.is_file())

    def read_meta(self, key: str) -> dict | None:
        """The metadata of ``key`` without any hash check (listing and explaining only)."""
        try:
            return json.loads((self.entry_path(key) / META).read_text())
        except (OSError, ValueError):
            return None

    def keys_for_graph(self, graph_id: str) -> list[str]:
        """Keys of entries made from the same graph (any shape, device or version): the index
        written by ``commit``, so a miss can say why near entries do not match without reading
        every entry."""
        d = self.graphs / graph_id[:40]
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir() if self.entry_path(p.name).is_dir())

    # -- trust -----------------------------------------------------------------------------
    def trust_problem(self, path: Path | None = None) -> str | None:
        """Why code under ``path`` (default: the cache root) must not be loaded, or None.

        Cache entries are code. They are loaded only when the cache root and the entry are owned
        by the current user and not writable by everyone; anything else (a team directory, a
        directory another user made) needs an explicit ``trust_cache_dir``."""
        uid = os.getuid() if hasattr(os, "getuid") else None
        for p in [self.root.parent, self.root] + ([Path(path)] if path is not None else []):
            try:
                st = p.stat()
            except OSError:
                continue
            if uid is not None and st.st_uid != uid:
                return f"{p} is owned by uid {st.st_uid}, not by the current user (uid {uid})"
            if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
                return f"{p} is writable by every user"
        return None

    # -- housekeeping ----------------------------------------------------------------------
    def clean_stale(self, max_age_s: float | None = None, dry_run: bool = False) -> list[Path]:
        """Remove staging dirs left by dead writers (a ``kill -9`` mid-write) and half-removed
        entries. A dir of this host is stale when its pid is gone; of another host (shared
        filesystem) when older than a day. ``max_age_s`` also removes anything older.
        ``dry_run``: only say which."""
        removed = []
        if not self.tmp.is_dir():
            return removed
        now = time.time()
        for d in self.tmp.iterdir():
            try:
                age = now - d.stat().st_mtime
            except OSError:
                continue
            stale = max_age_s is not None and age > max_age_s
            if not stale:
                pid, host = _staging_owner(d.name)
                if pid is None:
                    stale = age > 3600.0          # unknown names (rm.*): removed after an hour
                elif host in (None, HOST):
                    stale = not pid_alive(pid)
                else:
                    stale = age > STALE_FOREIGN_S
            if stale:
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
        return removed

    # -- writing ---------------------------------------------------------------------------
    def lock(self, key: str, timeout: float = -1) -> FileLock:
        """Per-key lock: one search per key across processes (filelock: the OS drops it when the
        holder dies, so a killed process never blocks others for ever)."""
        self._ensure()
        return FileLock(str(self.locks / f"{key}.lock"), timeout=timeout)

    def new_staging(self, key: str) -> Path:
        self._ensure()
        self.clean_stale()
        d = self.tmp / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}@{HOST}"
        d.mkdir(parents=True)
        return d

    def commit(self, key: str, staging: Path, meta: dict) -> CacheEntry:
        """Seal ``staging`` with its manifest and rename it into place (atomic on one filesystem).
        If another process committed the same key first, keep theirs."""
        meta = dict(meta, key=key, format=CACHE_FORMAT, manifest=manifest(staging),
                    created=time.time())
        tmp_meta = staging / (META + ".tmp")
        tmp_meta.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
        os.replace(tmp_meta, staging / META)
        final = self.entry_path(key)
        try:
            os.rename(staging, final)
        except OSError:
            if final.is_dir() and self.load(key) is not None:
                shutil.rmtree(staging, ignore_errors=True)
            else:
                shutil.rmtree(final, ignore_errors=True)
                os.rename(staging, final)
        self._index(key, meta)
        return CacheEntry(key, final, meta)

    def _index(self, key: str, meta: dict) -> None:
        graph = (meta.get("fields") or {}).get("graph")
        if not graph:
            return
        try:
            d = self.graphs / str(graph)[:40]
            d.mkdir(parents=True, exist_ok=True)
            (d / key).touch()
        except OSError:
            pass

    def remove(self, key: str) -> bool:
        path = self.entry_path(key)
        if not path.exists():
            return False
        # Rename first so that readers never see a half-deleted entry.
        self._ensure()
        doomed = self.tmp / f"rm.{key}.{uuid.uuid4().hex[:8]}"
        os.rename(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        for p in [self.usage / key, self.root / "checked" / f"{key}.json",
                  *self.graphs.glob(f"*/{key}")]:
            try:
                p.unlink()
            except OSError:
                pass
        return True


def _staging_owner(name: str) -> tuple[int | None, str | None]:
    """(pid, host) of a staging dir name ``KEY.PID.RANDOM[@HOST]``."""
    base, _, host = name.partition("@")
    parts = base.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None, None
    return int(parts[1]), host or None


__all__ = ["CacheDirError", "CacheEntry", "CacheStore", "CorruptEntry", "Timeout"]
