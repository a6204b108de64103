"""The engine interface."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..contracts import Attempt, Candidate
from ..task import Task


class EngineError(RuntimeError):
    """The engine itself failed (server unreachable, model not loaded): the search stops and the
    backend falls back. A bad *answer* is not an EngineError: it is a failed candidate."""


@dataclass
class SearchContext:
    """What an engine may know about the search besides the task and the history."""
    device: str = "cpu"                      # "cpu" or "cuda[:i]"
    device_info: dict = field(default_factory=dict)   # name, capability, SM count, memory, ...
    round: int = 1                           # 1-based engine round (round 0 = baselines)
    samples: int = 1                         # candidates asked for in this round
    key: str = ""                            # cache key of the task


class Engine:
    name = "engine"
    # The search keeps at most ``samples`` of a round's candidates; an engine whose rounds are
    # a fixed, small set of its own (the built-in one) has them all verified.
    bounded_by_samples = True

    def propose(self, task: Task, history: list[Attempt], ctx: SearchContext) -> list[Candidate]:
        """Return up to ``ctx.samples`` candidates (fewer, or none, when it has nothing new)."""
        raise NotImplementedError

    def close(self) -> None:
        pass
