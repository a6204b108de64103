"""Moving entries between machines: ``cudal1 cache export`` / ``import`` bundles (tar.gz).

A bundle holds ``bundle.json`` (format, exporter's environment, and per entry its key fields,
file manifest, the hash of its ``meta.json`` and the arbiter's kept decision, if any) and
``entries/<key>/...``; with a ``remote_secret``, also ``bundle.sig``: an HMAC-SHA256 of
``bundle.json``, which names every file's hash. Import extracts plain files and directories only
(``archive``: no links, devices, absolute paths or ``..``, at most ``MAX_ENTRY_BYTES`` per entry)
into the store's staging area, checks every file against both the bundle and the entry's own
manifest, and only then renames the entry into the local cache. Its entries stay marked as made
elsewhere (``imported``): checked against the caller's graph before their first use
(``foreign``), and their inductor artefacts (pickles) loaded only from a bundle signed with this
machine's ``remote_secret``.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import json
import shutil
import tarfile
import time
from pathlib import Path

from ..version import CACHE_FORMAT
from .archive import UnsafeArchive, extract, plain_members
from .decisions import read_decision, valid, write_decision
from .remote import MAX_ENTRY_BYTES
from .store import META, CacheStore, manifest

BUNDLE_MANIFEST = "bundle.json"
BUNDLE_SIGNATURE = "bundle.sig"
BUNDLE_FORMAT = 1


class BundleError(Exception):
    """The file is not a readable bundle."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _signature(secret: str, manifest_bytes: bytes) -> str:
    return hmac.new(secret.encode(), manifest_bytes, hashlib.sha256).hexdigest()


def export_bundle(store: CacheStore, keys: list[str], path: str | Path, environment: dict,
                  secret: str | None = None) -> dict:
    """Write the (hash-checked) entries ``keys`` into the tar.gz ``path``, signed with ``secret``
    where given; return the manifest."""
    info = {"bundle_format": BUNDLE_FORMAT, "cache_format": CACHE_FORMAT, "created": time.time(),
            "exported_from": environment, "entries": {}}
    entries = []
    for key in keys:
        entry = store.load(key)
        if entry is None:
            raise BundleError(f"entry {key} is missing or corrupt; not exported")
        meta_bytes = (entry.path / META).read_bytes()
        info["entries"][key] = {"fields": entry.meta.get("fields"), "manifest": entry.meta["manifest"],
                                "meta_sha256": _sha(meta_bytes),
                                "environment": entry.meta.get("environment")}
        decision = read_decision(store, key)   # what to serve for it, as measured where it was made
        if decision is not None:
            info["entries"][key]["serve"] = decision
        entries.append(entry)
    tmp = Path(str(path) + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        blob = json.dumps(info, indent=1, sort_keys=True, default=str).encode()
        members = [(BUNDLE_MANIFEST, blob)]
        if secret:
            members.append((BUNDLE_SIGNATURE, _signature(secret, blob).encode()))
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), int(time.time())
            tar.addfile(ti, io.BytesIO(data))
        for entry in entries:
            for p in sorted(entry.path.rglob("*")):
                if p.is_file() and not p.is_symlink():
                    tar.add(p, arcname=f"entries/{entry.key}/{p.relative_to(entry.path).as_posix()}",
                            recursive=False)
    tmp.replace(path)
    return info


def _member_bytes(tar: tarfile.TarFile, name: str, limit: int = 64 << 20) -> bytes | None:
    try:
        member = tar.getmember(name)
    except KeyError:
        return None
    if not member.isfile() or member.size > limit:
        raise BundleError(f"{name} is not a plain file of a sane size")
    return tar.extractfile(member).read()


def _read_head(path: str | Path) -> tuple[dict, bytes, bytes | None]:
    """(manifest, its bytes, the signature's bytes or None)."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            blob = _member_bytes(tar, BUNDLE_MANIFEST)
            if blob is None:
                raise KeyError(BUNDLE_MANIFEST)
            return json.loads(blob), blob, _member_bytes(tar, BUNDLE_SIGNATURE, 1024)
    except (OSError, KeyError, ValueError, tarfile.TarError) as e:
        raise BundleError(f"{path}: not a cudal1 cache bundle ({type(e).__name__}: {e})") from None


def read_manifest(path: str | Path) -> dict:
    return _read_head(path)[0]


def import_bundle(store: CacheStore, path: str | Path, *, replace: bool = False,
                  secret: str | None = None) -> list[dict]:
    """Check and import every entry of the bundle. Returns one report per entry:
    {key, status: imported | exists | rejected, detail, fields, signed}. ``signed``: the bundle
    carries a valid signature under ``secret`` (this machine's ``remote_secret``)."""
    info, blob, sig = _read_head(path)
    if info.get("cache_format") != CACHE_FORMAT:
        raise BundleError(f"{path}: cache format {info.get('cache_format')}, this version reads "
                          f"{CACHE_FORMAT}")
    signed = bool(secret and sig and hmac.compare_digest(sig.decode(errors="replace"),
                                                         _signature(secret, blob)))
    entries = info.get("entries") or {}
    store.tmp.mkdir(parents=True, exist_ok=True)
    work = store.new_staging("import")
    reports = []
    try:
        with tarfile.open(path, "r:gz") as tar:
            (work / "entries").mkdir()
            for key in sorted(entries):
                if not (key and all(c.isalnum() for c in key)):
                    continue            # rejected below, the rest imported
                try:
                    members = plain_members(tar, prefix=f"entries/{key}/",
                                            max_bytes=MAX_ENTRY_BYTES)
                    extract(tar, members, work)
                except UnsafeArchive as e:
                    raise BundleError(f"{path}: unsafe bundle ({e})") from None
        for key, want in sorted(entries.items()):
            report = _import_one(store, work / "entries" / key, key, want, path, replace, signed)
            _import_decision(store, key, want, report, replace)
            reports.append(report)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise BundleError(f"{path}: unreadable bundle ({type(e).__name__}: {e})") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return reports


def _import_decision(store: CacheStore, key: str, want: dict, report: dict, replace: bool) -> None:
    """The bundle's kept decision for an entry: cache-only serving follows it without timing.
    A decision already made here stays, unless the entry itself was replaced."""
    decision = valid(want.get("serve"))
    if decision is None or report["status"] == "rejected":
        return
    if read_decision(store, key) is None or (replace and report["status"] == "imported"):
        report["decision"] = decision.get("choice", "winner")
        write_decision(store, key, decision)


def _import_one(store: CacheStore, src: Path, key: str, want: dict, bundle: str | Path,
                replace: bool, signed: bool) -> dict:
    report = {"key": key, "fields": want.get("fields"), "environment": want.get("environment"),
              "signed": signed}
    if not all(c.isalnum() for c in key) or not src.is_dir():
        return dict(report, status="rejected", detail="entry missing from the bundle")
    try:
        meta_bytes = (src / META).read_bytes()
        meta = json.loads(meta_bytes)
    except (OSError, ValueError):
        return dict(report, status="rejected", detail="unreadable meta.json")
    if _sha(meta_bytes) != want.get("meta_sha256"):
        return dict(report, status="rejected", detail="meta.json does not match the bundle manifest")
    if meta.get("key") != key or meta.get("format") != CACHE_FORMAT:
        return dict(report, status="rejected", detail="key or format mismatch")
    got = manifest(src)
    if got != meta.get("manifest") or got != want.get("manifest"):
        bad = sorted(set(got.items()) ^ set((meta.get("manifest") or {}).items()))
        return dict(report, status="rejected",
                    detail=f"content hash mismatch ({bad[0][0] if bad else 'manifest'})")
    if store.load(key) is not None and not replace:
        return dict(report, status="exists", detail="already in the cache")
    staging = store.new_staging(key)
    shutil.rmtree(staging)
    shutil.copytree(src, staging, symlinks=False)
    meta["imported"] = {"from": str(bundle), "via": "bundle", "at": time.time(),
                        "hashes_checked": True, "signed": signed,
                        "created_at_source": meta.get("created")}
    if replace:
        store.remove(key)
    store.commit(key, staging, {k: v for k, v in meta.items()
                                if k not in ("key", "format", "created", "manifest")})
    return dict(report, status="imported",
                detail="hashes checked" + ("; signed with this machine's remote_secret" if signed
                                           else ""))
