"""Moving entries between machines: ``cudal1 cache export`` / ``import`` bundles (tar.gz).

A bundle holds ``bundle.json`` (format, exporter's environment, and per entry its key fields,
file manifest, the hash of its ``meta.json`` and the arbiter's kept decision, if any) and
``entries/<key>/...``. Import extracts into
the store's staging area with tarfile's ``data`` filter (no links, devices, absolute paths or
``..``), checks every file against both the bundle and the entry's own manifest, and only then
renames the entry into the local cache, where it belongs to the importing user and is trusted.
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import time
from pathlib import Path

from ..version import CACHE_FORMAT
from .decisions import read_decision, valid, write_decision
from .store import META, CacheStore, manifest

BUNDLE_MANIFEST = "bundle.json"
BUNDLE_FORMAT = 1


class BundleError(Exception):
    """The file is not a readable bundle."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def export_bundle(store: CacheStore, keys: list[str], path: str | Path, environment: dict) -> dict:
    """Write the (hash-checked) entries ``keys`` into the tar.gz ``path``; return the manifest."""
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
        ti = tarfile.TarInfo(BUNDLE_MANIFEST)
        ti.size, ti.mtime = len(blob), int(time.time())
        tar.addfile(ti, io.BytesIO(blob))
        for entry in entries:
            for p in sorted(entry.path.rglob("*")):
                if p.is_file() and not p.is_symlink():
                    tar.add(p, arcname=f"entries/{entry.key}/{p.relative_to(entry.path).as_posix()}",
                            recursive=False)
    tmp.replace(path)
    return info


def read_manifest(path: str | Path) -> dict:
    try:
        with tarfile.open(path, "r:gz") as tar:
            member = tar.getmember(BUNDLE_MANIFEST)
            return json.loads(tar.extractfile(member).read())
    except (OSError, KeyError, ValueError, tarfile.TarError) as e:
        raise BundleError(f"{path}: not a cudal1 cache bundle ({type(e).__name__}: {e})") from None


def import_bundle(store: CacheStore, path: str | Path, *, replace: bool = False) -> list[dict]:
    """Check and import every entry of the bundle. Returns one report per entry:
    {key, status: imported | exists | rejected, detail, fields}."""
    info = read_manifest(path)
    if info.get("cache_format") != CACHE_FORMAT:
        raise BundleError(f"{path}: cache format {info.get('cache_format')}, this version reads "
                          f"{CACHE_FORMAT}")
    store.tmp.mkdir(parents=True, exist_ok=True)
    work = store.new_staging("import")
    reports = []
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("entries/")]
            tar.extractall(work, members=members, filter="data")
        for key, want in sorted(info.get("entries", {}).items()):
            report = _import_one(store, work / "entries" / key, key, want, path, replace)
            _import_decision(store, key, want, report, replace)
            reports.append(report)
    except tarfile.TarError as e:
        raise BundleError(f"{path}: unreadable bundle ({e})") from None
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
                replace: bool) -> dict:
    report = {"key": key, "fields": want.get("fields"), "environment": want.get("environment")}
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
                        "hashes_checked": True, "created_at_source": meta.get("created")}
    if replace:
        store.remove(key)
    store.commit(key, staging, {k: v for k, v in meta.items()
                                if k not in ("key", "format", "created", "manifest")})
    return dict(report, status="imported", detail="hashes checked")
