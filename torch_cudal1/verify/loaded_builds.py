"""The libraries a candidate built and loaded, as the kernel saw its process load them.

A cache entry keeps a winner's built extensions (``artifacts/``) and a serving process loads them
without any check, so what is kept must be the very files the verified process ran. The
candidate's process may write its build folder (it compiles there), so it could load one library
and then put another in its place, beside it, or write over it, and have that one cached. The
judge therefore never takes the folder's word for it: it reads the worker's memory map
(``/proc/<pid>/maps``, kept by the kernel) and keeps only the shared libraries under the build
folder that the worker has mapped, are still the file at that path, and have the same content at
every look (after import, after verification, after timing). A library mapped and then deleted,
renamed over or rewritten is ``artifact_changed``; one the worker never loaded is not kept. The
runner copies exactly the kept files and checks their hashes again after the worker has gone
(code run at exit cannot swap one either); a serving process loads exactly the file torch would
have imported for each ``load_inline`` call (``cache/winner.py``).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..file_hash import sha256_of as sha256
from . import host_load

# AOTInductor packages (``*.pt2``) are read, not mapped: kept for the harness's own candidates only.
PACKAGE_SUFFIX = ".pt2"


def _is_library(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".so") or ".so." in name


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _start_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return int(data[data.rfind(b")") + 2:].split()[19])
    except (OSError, IndexError, ValueError):
        return 1 << 62


def worker_pid(root: int, args: tuple[str, ...]) -> int | None:
    """The process under ``root`` (the sandbox, or the worker itself) whose command line's
    arguments start with ``args`` (``("-",)``: ``python -``): the first started of them (a fork
    made by the candidate starts later)."""
    table = host_load._proc_table()
    found = [pid for pid in host_load._tree(root, table)
             if _cmdline(pid)[1:1 + len(args)] == list(args)]
    return min(found, key=_start_ticks) if found else None


def mapped_libraries(pid: int, roots: list[str]) -> dict[str, tuple[int, bool]] | None:
    """``path -> (inode, deleted)`` of the shared libraries under ``roots`` that ``pid`` maps;
    None where its map cannot be read."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out = {}
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path, inode = parts[5], int(parts[4])
        deleted = path.endswith(" (deleted)")
        if deleted:
            path = path[:-len(" (deleted)")]
        if _is_library(path) and any(path.startswith(r + os.sep) for r in roots):
            out[path] = (inode, deleted or out.get(path, (0, False))[1])
    return out


class Changed(Exception):
    """A loaded library was replaced or rewritten on disk (reason ``artifact_changed``)."""


class LoadedBuilds:
    """The kept libraries of one worker, looked at again after each phase (``look``)."""

    def __init__(self, build_dir: str | None, root_pid: int | None, args: tuple[str, ...] = (),
                 packages: bool = False):
        """``root_pid``: the sandbox's process, under which the one started with ``args``
        (``worker_pid``) is the worker; without ``args``, ``root_pid`` is the worker itself."""
        self.dir = build_dir
        self.roots = sorted({build_dir, os.path.realpath(build_dir)}) if build_dir else []
        self.pid = None
        if root_pid and build_dir:
            self.pid = worker_pid(root_pid, args) if args else root_pid
        self.packages = packages
        self.kept: dict[str, str] | None = {} if self.pid else None   # relpath -> sha256

    def _rel(self, path: str) -> str:
        for r in self.roots:
            if path.startswith(r + os.sep):
                return os.path.relpath(path, r)
        return path

    def look(self, when: str) -> None:
        """Raises ``Changed`` for a library the worker loaded from the build folder that is gone
        from its path, is another file there now, or has other content than at the last look."""
        if self.kept is None:
            return
        maps = mapped_libraries(self.pid, self.roots)
        if maps is None:   # the process is gone or its map unreadable: nothing can be vouched for
            self.kept = None
            return
        for path, (inode, deleted) in sorted(maps.items()):
            rel = self._rel(path)
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if deleted or st is None or st.st_ino != inode or not os.path.isfile(path) \
                    or os.path.islink(path):
                raise Changed(f"{rel} was loaded and then deleted or replaced on disk ({when})")
            digest = sha256(path)
            if self.kept.get(rel, digest) != digest:
                raise Changed(f"{rel} was rewritten on disk after it was loaded ({when})")
            self.kept[rel] = digest

    def files(self) -> dict[str, str] | None:
        """``relpath -> sha256`` of what the cache may keep, or None where nothing was vouched
        for (a serving process then builds from the winner's source)."""
        if self.kept is None:
            return None
        kept = dict(self.kept)
        if self.packages and self.dir and os.path.isdir(self.dir):
            for p in Path(self.dir).glob("*" + PACKAGE_SUFFIX):
                if p.is_file() and not p.is_symlink() and ".tmp." not in p.name:
                    kept[p.name] = sha256(str(p))
        return kept
