"""Engines turn (task, history) into candidate sources; nothing here runs candidate code.

``registry``: the engines by name (adding one: a module and one line there); ``baselines``: the
task's own Model and its torch.compile'd variants as candidates; ``builtin``: model-free
candidates; ``llm``: the LLM engines and their contrastive prompt; ``replay``: recorded answers.
Each engine module imports its own optional dependencies lazily, so ``create`` works with only
what the chosen engine needs.
"""
from __future__ import annotations

from .base import Engine, EngineError, SearchContext
from .registry import engine_class, names


def create(options) -> Engine:
    """Build the engine named by ``options.engine``; with ``record_file`` set, every round's
    request and answers are also appended to that transcript (replay it with engine=replay)."""
    engine = engine_class(options.engine)(options)
    record = getattr(options, "record_file", None)
    if record:
        from .replay import RecordingEngine
        engine = RecordingEngine(engine, record)
    return engine


__all__ = ["Engine", "EngineError", "SearchContext", "create", "engine_class", "names"]
