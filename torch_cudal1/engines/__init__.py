"""Engines turn (task, history) into candidate sources. Each engine module imports its own optional
dependencies lazily, so ``create`` works with only what the chosen engine needs."""
from __future__ import annotations

from .base import Engine, EngineError, SearchContext


def create(options) -> Engine:
    """Build the engine named by ``options.engine``; with ``record_file`` set, every round's
    request and answers are also appended to that transcript (replay it with engine=replay)."""
    engine = _create(options)
    record = getattr(options, "record_file", None)
    if record:
        from .replay import RecordingEngine
        engine = RecordingEngine(engine, record)
    return engine


def _create(options) -> Engine:
    name = options.engine
    if name == "builtin":
        from .builtin import BuiltinEngine
        return BuiltinEngine(options)
    if name == "openai":
        from .openai_engine import OpenAIEngine
        return OpenAIEngine(options)
    if name == "vllm":
        from .vllm_engine import VLLMEngine
        return VLLMEngine(options)
    if name == "replay":
        from .replay import ReplayEngine
        return ReplayEngine(options)
    raise ValueError(f"unknown engine {name!r}")


__all__ = ["Engine", "EngineError", "SearchContext", "create"]
