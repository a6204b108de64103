"""The model-free built-in engine (strategies grow in the performance work)."""
from __future__ import annotations

from ..base import Engine, SearchContext


class BuiltinEngine(Engine):
    name = "builtin"

    def __init__(self, options=None):
        self.options = options

    def propose(self, task, history, ctx: SearchContext):
        return []
