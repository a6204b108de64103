"""The data that flows between units: Candidate, Verdict, Timing, Attempt.

See ARCHITECTURE.md ("Contracts"). All of them are plain dataclasses that round-trip through JSON,
because they cross process boundaries (verifier children) and land in cache metadata.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field

from .origin import Origin

# Machine-readable rejection reasons. "ok" is the reason of an accepted verdict.
REASONS = (
    "ok", "mismatch", "nan", "dtype", "shape", "stride", "lazy_output", "stale_output",
    "output_aliased", "input_mutated", "async_work", "timer_tampering", "forbidden_call",
    "seed_dependent", "nondeterministic", "timeout", "crash", "build_error", "no_model_new",
    "not_faster", "memory", "global_state", "error", "sandbox", "artifact_changed",
)


@dataclass
class Candidate:
    """Python source defining ``class ModelNew(nn.Module)`` plus where it came from."""
    source: str
    origin: str                      # the text of an Origin: "baseline:eager", "openai:r1s0", ...
    round: int = 0
    sample: int = 0
    meta: dict = field(default_factory=dict)   # raw response, analysis, prompt hash, ...

    def __post_init__(self):
        self.origin = str(self.origin)   # an Origin is kept as its text: the form JSON carries

    @property
    def identity(self) -> Origin:
        """``origin`` as a structured value (engine, base, rewrites, wrappers)."""
        return Origin.parse(self.origin)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Candidate":
        return cls(**d)


@dataclass
class Verdict:
    accepted: bool
    reason: str = "ok"               # one of REASONS
    detail: str = ""
    stats: dict = field(default_factory=dict)  # max errors, tolerances, trials run, ...

    @classmethod
    def ok(cls, detail: str = "", **stats) -> "Verdict":
        return cls(True, "ok", detail, stats)

    @classmethod
    def reject(cls, reason: str, detail: str, **stats) -> "Verdict":
        assert reason in REASONS, reason
        return cls(False, reason, detail, stats)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        return cls(**d)


@dataclass
class Timing:
    """Milliseconds per call: median and spread (inter-quartile range) over ``n`` samples."""
    median_ms: float
    spread_ms: float
    n: int
    method: str = ""                 # "cuda_events", "do_bench", "cpu_perf_counter", "cuda_graph"
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def paired_speedup(self) -> float | None:
        """The reference's time over this one's, the reference timed right after it in the same
        verifier child (option ``pair_reference``); None where it was not."""
        ref = self.extra.get("paired_ref_ms")
        return ref / self.median_ms if ref and self.median_ms > 0 else None

    @classmethod
    def from_json(cls, d: dict | None) -> "Timing | None":
        return None if d is None else cls(**d)


@dataclass
class Attempt:
    """One evaluated candidate: what the search history and the prompts are made of."""
    candidate: Candidate
    verdict: Verdict
    timing: Timing | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_inductor: float | None = None
    seconds: float = 0.0             # wall time of build + verify + timing
    at_s: float | None = None        # when its verdict was in, in seconds from its search's start

    def to_json(self) -> dict:
        return {"candidate": self.candidate.to_json(), "verdict": self.verdict.to_json(),
                "timing": None if self.timing is None else self.timing.to_json(),
                "speedup_vs_eager": self.speedup_vs_eager,
                "speedup_vs_inductor": self.speedup_vs_inductor, "seconds": self.seconds,
                "at_s": self.at_s}

    @classmethod
    def from_json(cls, d: dict) -> "Attempt":
        return cls(Candidate.from_json(d["candidate"]), Verdict.from_json(d["verdict"]),
                   Timing.from_json(d.get("timing")), d.get("speedup_vs_eager"),
                   d.get("speedup_vs_inductor"), d.get("seconds", 0.0), d.get("at_s"))
