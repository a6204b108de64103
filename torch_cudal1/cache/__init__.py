"""The on-disk cache: keys, environment fingerprints and immutable entries."""
from .key import cache_key, environment_fingerprint, input_metadata, numerics_flags
from .store import CacheEntry, CacheStore

__all__ = ["CacheEntry", "CacheStore", "cache_key", "environment_fingerprint", "input_metadata",
           "numerics_flags"]
