"""The on-disk cache: keys (``key.py``, the only key builder), immutable entries (``store.py``),
the shared remote tier (``remote.py``, ``tiered.py``), entries from other machines
(``foreign.py``, ``bundle.py``), test vectors (``vectors.py``) and loading a winner
(``winner.py``). ``store_for(options)`` is the cache a process uses."""
from .key import cache_key, environment_fingerprint, input_metadata, numerics_flags
from .store import CacheEntry, CacheStore
from .tiered import store_for

__all__ = ["CacheEntry", "CacheStore", "cache_key", "environment_fingerprint", "input_metadata",
           "numerics_flags", "store_for"]
