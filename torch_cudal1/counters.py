"""Process-wide counters and the keys this process asked for.

``torch_cudal1.stats()`` returns ``STATS``; tests and ``cudal1`` reports read both (a cache hit
runs no search, ``cudal1 cache explain`` lists ``SEEN_KEYS``). A leaf module: every layer counts
here without importing the layers above it.
"""
from __future__ import annotations

from collections import Counter

# cache hits and misses, searches, evaluations, fallbacks, swaps, ...
STATS: Counter = Counter()
# Every graph key this process asked for: dicts with key, graph, device, hit, fields.
SEEN_KEYS: list = []

__all__ = ["STATS", "SEEN_KEYS"]
