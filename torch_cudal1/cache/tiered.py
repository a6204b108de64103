"""A local cache directory backed by a shared remote tier (Redis).

Reads fall through local -> remote -> (the caller's) search; a remote entry is unpacked into the
local store's staging area, passes the same checks as a local entry (manifest hashes, key, format)
plus a check that its recorded key fields hash to the key asked for (so it was made for this
device, these versions and numerics flags), and only then is renamed into place. Writes commit
locally first, then upload in the background: the caller never waits for the network.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..counters import STATS
from .key import cache_key
from .remote import BadBlob, RemoteTier, redact_url, tier_for, unpack
from .store import META, CacheEntry, CacheStore, CorruptEntry


class TieredStore(CacheStore):
    def __init__(self, root: str | os.PathLike, remote: RemoteTier, **kwargs):
        super().__init__(root, **kwargs)
        self.remote = remote

    @classmethod
    def over(cls, local: CacheStore, remote: RemoteTier) -> "TieredStore":
        """The tiered view of an already configured local store (whatever its constructor took)."""
        store = cls.__new__(cls)
        store.__dict__.update(local.__dict__)
        store.remote = remote
        return store

    @classmethod
    def from_url(cls, local: CacheStore, url: str, timeout_s: float = 5.0,
                 secret: str | None = None) -> "TieredStore":
        return cls.over(local, tier_for(url, timeout_s, secret))

    # -- reading --------------------------------------------------------------------------------
    def load(self, key: str, *args, **kwargs) -> CacheEntry | None:
        entry = super().load(key, *args, **kwargs)
        # A local directory that exists but was refused (untrusted, other environment) is not
        # replaced from the remote tier: only a missing (or just quarantined) entry is fetched.
        if entry is not None or not self.remote.enabled or self.entry_path(key).exists():
            return entry
        got = self.remote.fetch(key)
        if got is None or not self._install(key, *got):
            return None
        STATS["remote_hits"] += 1
        entry = super().load(key, *args, **kwargs)
        if entry is not None:
            entry.source = "remote"
        return entry

    def _install(self, key: str, blob: bytes, info: dict | None = None) -> bool:
        staging = self.new_staging(key)
        try:
            unpack(blob, staging)
            meta = self.check_staged(key, staging)
            # Made on another machine: checked against its test vectors before its first use
            # here (cache/foreign.py). The mark is ours, whatever the blob's metadata said.
            meta["imported"] = {"from": redact_url(self.remote.url), "via": "remote",
                                "at": time.time(), "blob": (info or {}).get("blob"),
                                "host": (info or {}).get("host"),
                                # fetch() refused it unless signed, where a secret is set
                                "signed": self.remote.signs,
                                "created_at_source": meta.get("created")}
            tmp = staging / (META + ".tmp")
            tmp.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
            os.replace(tmp, staging / META)
            os.rename(staging, self.entry_path(key))   # atomic: readers see all of it or nothing
            index = getattr(self, "_index", None)      # the local store's graph -> keys index
            if index is not None:
                index(key, meta)
            return True
        except (BadBlob, CorruptEntry) as e:
            self.remote.reject(key, str(e), (info or {}).get("blob"))
            return False
        except OSError:
            # Another process installed (or committed) the same key first: theirs is as good.
            return self.entry_path(key).is_dir()
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def check_staged(self, key: str, staging: Path) -> dict:
        """The metadata of ``staging``; CorruptEntry unless it is a sound entry made for ``key``."""
        entry = self._read(key, staging, True)       # the local store's own integrity checks
        fields = entry.meta.get("fields")
        if not isinstance(fields, dict) or cache_key(fields) != key:
            raise CorruptEntry("its key fields do not hash to the key (made for another "
                               "device, version or flags)")
        return entry.meta

    # -- writing --------------------------------------------------------------------------------
    def commit(self, key: str, staging: Path, meta: dict, *args, **kwargs) -> CacheEntry:
        entry = super().commit(key, staging, meta, *args, **kwargs)
        winner = meta.get("winner") or {}
        self.remote.push(key, entry.path, {"task": meta.get("task_name"),
                                           "origin": winner.get("origin"),
                                           "device": (meta.get("fields") or {}).get("device")})
        return entry


def store_for(options) -> CacheStore:
    """The cache of ``options``: its local dir, and with ``remote_cache`` set the same dir backed
    by the shared tier."""
    store = CacheStore(options.cache_path)
    url = getattr(options, "remote_cache", None)
    if url:
        store = TieredStore.from_url(store, url, getattr(options, "remote_timeout_s", 5.0),
                                     getattr(options, "remote_secret", None))
    return store


__all__ = ["TieredStore", "store_for"]
