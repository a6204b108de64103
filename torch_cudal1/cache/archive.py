"""Extracting untrusted tar archives (remote blobs, bundles) without trusting tarfile's filters.

Only plain files and directories are written, each by this code, at a path built from the
member's name, which must be relative and free of ``..``; links, devices and FIFOs refuse the
whole archive. Nothing is resolved through the file system before writing (``O_NOFOLLOW`` on
every file, directories made here), so no link, planted or pre-existing, can redirect a write:
tarfile's ``data`` filter resolves paths with ``realpath``, which some Python releases let a
long chain of links defeat. Sizes are bounded before anything is written.
"""
from __future__ import annotations

import os
import tarfile
from pathlib import Path, PurePosixPath

CHUNK = 1 << 20


class UnsafeArchive(Exception):
    """An archive that must not be extracted (a link, a name outside the target, too large)."""


def plain_members(tar: tarfile.TarFile, *, prefix: str = "", max_bytes: int) -> list:
    """The members of ``tar`` under ``prefix`` (all when empty); UnsafeArchive unless every one of
    them is a plain file or directory with a safe name, and their sizes add up to at most
    ``max_bytes``."""
    out, total = [], 0
    for m in tar.getmembers():
        if prefix and not (m.name == prefix.rstrip("/") or m.name.startswith(prefix)):
            continue
        name = PurePosixPath(m.name)
        if not (m.isfile() or m.isdir()):
            raise UnsafeArchive(f"{m.name!r} is not a plain file or directory")
        if name.is_absolute() or ".." in name.parts or not name.parts or "\\" in m.name:
            raise UnsafeArchive(f"{m.name!r} points outside the archive's folder")
        total += m.size
        if total > max_bytes:
            raise UnsafeArchive(f"more than {max_bytes} bytes once extracted")
        out.append(m)
    return out


def extract(tar: tarfile.TarFile, members: list, dest: Path) -> None:
    """Write ``members`` (from ``plain_members``) under the existing directory ``dest``."""
    dest = Path(dest)
    for m in members:
        parts = PurePosixPath(m.name).parts
        target = dest.joinpath(*parts)
        _make_dirs(dest, parts if m.isdir() else parts[:-1])
        if m.isdir():
            continue
        src = tar.extractfile(m)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            raise UnsafeArchive(f"{m.name!r} appears twice") from None
        with os.fdopen(fd, "wb") as f:
            left = m.size
            while left > 0:
                chunk = src.read(min(CHUNK, left))
                if not chunk:
                    raise UnsafeArchive(f"{m.name!r} is shorter than its header says")
                f.write(chunk)
                left -= len(chunk)


def _make_dirs(dest: Path, parts) -> None:
    """``dest/parts...`` as real directories made here (an existing link in the way refuses)."""
    d = dest
    for p in parts:
        d = d / p
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            if d.is_symlink() or not d.is_dir():
                raise UnsafeArchive(f"{d} is in the way of the archive's folders") from None


__all__ = ["UnsafeArchive", "extract", "plain_members"]
