"""SHA-256 of a file, read in blocks (cache manifests, the verifier's kept builds)."""
from __future__ import annotations

import hashlib
import os


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
