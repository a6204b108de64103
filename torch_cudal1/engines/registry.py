"""The engines by name: the one place an engine is registered.

Adding an engine is one module (a subclass of ``engines.base.Engine`` taking the options) and one
``register`` line below. Entries name their class as ``"module:Class"`` and are imported only
when that engine is created, so an engine's optional dependencies (vllm, httpx) are needed only
by whoever uses it; ``options`` validates ``engine=`` against ``names()`` and the command line
offers them as ``--engine`` choices, without importing any engine.
"""
from __future__ import annotations

import importlib

_ENGINES: dict[str, str] = {}


def register(name: str, target: str) -> None:
    """``target``: ``"torch_cudal1.engines.<module>:<Class>"`` (relative: ``".<module>:<Class>"``)."""
    if name in _ENGINES and _ENGINES[name] != target:
        raise ValueError(f"engine {name!r} is registered already ({_ENGINES[name]})")
    _ENGINES[name] = target


def names() -> tuple[str, ...]:
    return tuple(_ENGINES)


def engine_class(name: str):
    """The engine class registered as ``name`` (its module imported now)."""
    try:
        target = _ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(_ENGINES)}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module, package=__package__), cls)


register("builtin", ".builtin:BuiltinEngine")             # model-free: rewrites, compilers, wraps
register("openai", ".llm.openai_engine:OpenAIEngine")     # any OpenAI-compatible server
register("vllm", ".llm.vllm_engine:VLLMEngine")           # vLLM in this process
register("replay", ".replay:ReplayEngine")                # a recorded transcript

__all__ = ["engine_class", "names", "register"]
