"""Where a candidate came from, as one value: ``Origin``.

Its text (``Candidate.origin``, ``winner.origin`` in cache metadata, ``winner_origin`` in
``cudal1 optimize --json``) is what outside tools read, so it never changes form:

    engine ":" base ["+" wrapper]...

* ``engine``: ``baseline``, ``builtin``, an LLM engine (``openai``, ``vllm``, ``replay``), or a
  source outside the search (``file``, ``cache``, ``fallback``);
* ``base``: what the candidate starts from: a baseline's name (``eager``, ``inductor``,
  ``inductor-max-autotune``, ...), a built-in family (``cudagraph``, ``tf32``,
  ``channels-last``, ...), or ``rewrite(p1,p2)``: the task's graph with the rewrite passes
  ``p1``, ``p2`` applied (``rewrites``);
* ``wrappers``: what runs it, in order (``inductor``, ``tf32``, ``cudnn-benchmark``, ``aoti``,
  ``cudagraph``, ...): ``builtin:rewrite(cse)+inductor+tf32`` is the rewritten graph through
  inductor with its float32 products in TF32.

The text of an LLM engine's candidate (``openai:r1s0``) and of the outside sources (a path, a
key) is kept whole as the base; ``parse`` and ``str`` are exact inverses for every text.
Code asks an ``Origin`` (``has``, ``compiled``, ``replays_graph``, ``is_baseline``) instead of
matching substrings of the text.
"""
from __future__ import annotations

from dataclasses import dataclass

# Engines whose text is structured as base + wrappers; any other engine's text is one base.
STRUCTURED = ("baseline", "builtin")
# Steps whose candidate replays a CUDA graph (launch cost paid once per call).
GRAPH_REPLAY = ("cudagraph", "inductor-reduce-overhead")


@dataclass(frozen=True)
class Origin:
    engine: str
    base: str
    rewrites: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()

    # -- text ---------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text) -> "Origin":
        """The ``Origin`` of a text (an ``Origin`` is returned as it is)."""
        if isinstance(text, Origin):
            return text
        text = str(text or "")
        engine, sep, rest = text.partition(":")
        if not sep or not engine:
            return cls("", text)
        if engine not in STRUCTURED:
            return cls(engine, rest)
        base, *wrappers = rest.split("+")
        passes = base[len("rewrite("):-1] if base.startswith("rewrite(") and base.endswith(")") \
            else ""
        if passes:
            return cls(engine, "rewrite", tuple(passes.split(",")), tuple(wrappers))
        return cls(engine, base, (), tuple(wrappers))

    def __str__(self) -> str:
        base = f"rewrite({','.join(self.rewrites)})" if self.rewrites else self.base
        text = "+".join((base,) + self.wrappers)
        return f"{self.engine}:{text}" if self.engine else text

    # -- questions ----------------------------------------------------------------------------------
    @property
    def steps(self) -> tuple[str, ...]:
        """The base and its wrappers, in order (``rewrite`` for a rewritten graph)."""
        return (self.base,) + self.wrappers

    @property
    def is_baseline(self) -> bool:
        return self.engine == "baseline"

    def has(self, step: str) -> bool:
        """``step`` is the base or one of the wrappers (``tf32``, ``cudagraph``, ...)."""
        return step in self.steps

    @property
    def compiled(self) -> bool:
        """Inductor compiles it (any of inductor's modes), as base or as a wrapper."""
        return any(s == "inductor" or s.startswith("inductor-") for s in self.steps)

    @property
    def replays_graph(self) -> bool:
        """It runs as a CUDA graph already (a graph wrapper, or inductor's reduce-overhead)."""
        return any(s in GRAPH_REPLAY for s in self.steps)

    # -- derived origins ----------------------------------------------------------------------------
    def wrapped(self, wrapper: str, engine: str = "builtin") -> "Origin":
        """This candidate run by ``wrapper`` (proposed by ``engine``): a baseline's or a built-in
        candidate's steps with ``wrapper`` appended; another engine's whole text as the base."""
        if self.engine in STRUCTURED:
            return Origin(engine, self.base, self.rewrites, self.wrappers + (wrapper,))
        return Origin(engine, str(self), (), (wrapper,))

    @classmethod
    def baseline(cls, name: str) -> "Origin":
        return cls("baseline", name)

    @classmethod
    def sampled(cls, engine: str, round: int, sample: int) -> "Origin":
        """Sample ``sample`` of an engine's round ``round`` (``openai:r1s0``)."""
        return cls(engine, f"r{round}s{sample}")

    @classmethod
    def builtin(cls, base: str, *wrappers: str, rewrites: tuple[str, ...] = ()) -> "Origin":
        return cls("builtin", "rewrite" if rewrites else base, tuple(rewrites), tuple(wrappers))


__all__ = ["GRAPH_REPLAY", "Origin", "STRUCTURED"]
