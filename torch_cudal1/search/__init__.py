"""The search and the transaction that stores its result.

* ``loop``: baselines first, then engine rounds; every candidate verified and timed
  (``run_search``);
* ``noise`` and ``stability``: when a timing is taken again, when a gap is a real one, and when
  the host was too noisy to decide;
* ``store``: a search's result written as the key's cache entry;
* ``transaction``: look up, lock, look up again, search, store, clean up (``search_and_store``),
  the one path by which serving, the async worker, ``cudal1 optimize`` and ``cudal1 warm`` fill
  the cache.
"""
from .loop import SearchError, SearchResult, device_info, run_search
from .noise import DISTURBED_SWITCHES, MIN_GAIN, WIDE_SPREAD, beats, retime_unsound
from .transaction import Outcome, search_and_store

__all__ = ["DISTURBED_SWITCHES", "MIN_GAIN", "Outcome", "SearchError", "SearchResult",
           "WIDE_SPREAD", "beats", "device_info", "retime_unsound", "run_search",
           "search_and_store"]
