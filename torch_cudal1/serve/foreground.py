"""The seconds this process's calls have spent searching, against ``foreground_budget_s``.

With ``mode="search"`` a cache miss is searched inside the call that met it. A model with many
graphs (an encoder-decoder generating, a model broken into pieces by Python control flow) would
keep its first call waiting for every graph's search in turn; once the searches in this
process's calls have taken ``foreground_budget_s``, later misses run the fallback and are
searched by a background worker, as with ``mode="async"``.
"""
from __future__ import annotations

import threading


class ForegroundBudget:
    def __init__(self):
        self._lock = threading.Lock()
        self.spent_s = 0.0
        self.said = False

    def add(self, seconds: float) -> None:
        with self._lock:
            self.spent_s += max(0.0, seconds)

    def over(self, budget_s: float) -> bool:
        return self.spent_s >= budget_s

    def first_time_over(self) -> bool:
        """True once: the first miss past the budget says so."""
        with self._lock:
            said, self.said = self.said, True
            return not said

    def reset(self) -> None:
        with self._lock:
            self.spent_s, self.said = 0.0, False


FOREGROUND = ForegroundBudget()
