__version__ = "0.1.0"
# Bumped whenever the meaning of a cache entry changes; part of every key.
CACHE_FORMAT = 1
