"""Immutable cache entries on disk, shared by many processes.

An entry is a directory ``entries/<key>/`` holding ``meta.json`` (key fields, fingerprint,
timings, verdicts, every round's provenance and a manifest of file hashes), ``winner.py``,
``task.py`` (+ ``inputs.safetensors``), ``vectors.safetensors`` (test vectors) and ``artifacts/``
(built extensions). It is written under a temporary name and renamed into place, so readers see
a whole entry or none; a directory whose manifest does not match is quarantined, never served.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from ..version import CACHE_FORMAT

META = "meta.json"
WINNER = "winner.py"
ARTIFACTS = "artifacts"
VECTORS = "vectors.safetensors"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest(directory: Path) -> dict:
    files = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file() and p.name != META and not p.name.endswith(".lock"):
            files[p.relative_to(directory).as_posix()] = _sha256(p)
    return files


@dataclass
class CacheEntry:
    key: str
    path: Path
    meta: dict

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


class CacheStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser() / f"v{CACHE_FORMAT}"
        self.entries = self.root / "entries"
        self.locks = self.root / "locks"
        self.quarantine_dir = self.root / "quarantine"
        self.tmp = self.root / "tmp"

    def _ensure(self) -> None:
        for d in (self.entries, self.locks, self.tmp):
            d.mkdir(parents=True, exist_ok=True)

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

    def quarantine(self, key: str, why: str) -> None:
        src = self.entry_path(key)
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        dst = self.quarantine_dir / f"{key}-{int(time.time())}-{uuid.uuid4().hex[:6]}"
        try:
            os.rename(src, dst)
            (dst / "QUARANTINED").write_text(why + "\n")
        except OSError:
            shutil.rmtree(src, ignore_errors=True)
        from ..log import logger
        logger.warning("cache entry %s was corrupt (%s); quarantined and will be rebuilt", key, why)

    def keys(self) -> list[str]:
        if not self.entries.is_dir():
            return []
        return sorted(p.name for p in self.entries.iterdir() if p.is_dir() and not p.name.startswith("."))

    # -- writing ---------------------------------------------------------------------------
    def lock(self, key: str, timeout: float = -1) -> FileLock:
        """Per-key lock: one search per key across processes (filelock: the OS drops it when the
        holder dies, so a killed process never blocks others for ever)."""
        self._ensure()
        return FileLock(str(self.locks / f"{key}.lock"), timeout=timeout)

    def new_staging(self, key: str) -> Path:
        self._ensure()
        d = self.tmp / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
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
        return CacheEntry(key, final, meta)

    def remove(self, key: str) -> bool:
        path = self.entry_path(key)
        if not path.exists():
            return False
        # Rename first so that readers never see a half-deleted entry.
        self._ensure()
        doomed = self.tmp / f"rm.{key}.{uuid.uuid4().hex[:8]}"
        os.rename(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        return True


__all__ = ["CacheEntry", "CacheStore", "CorruptEntry", "Timeout"]
