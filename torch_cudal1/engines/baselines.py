"""Baselines as candidates: the task's own Model (eager) and torch.compile'd variants.

They go through the same verifier and timing harness as every other candidate, so a baseline can
win, and the speedups of all candidates are measured against them in the same way.
"""
from __future__ import annotations

from ..contracts import Candidate
from ..origin import Origin
from ..task import Task

_EAGER = '''

class ModelNew(Model):
    """Baseline: the reference itself."""
'''

_COMPILED = '''

class ModelNew(Model):
    """Baseline: the reference through torch.compile({args})."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cudal1_compiled = torch.compile(self._cudal1_reference{kw})

    def _cudal1_reference(self, *inputs):
        return Model.forward(self, *inputs)

    def forward(self, *inputs):
        return self._cudal1_compiled(*inputs)
'''

BASELINES = {
    "eager": ("", ""),
    "inductor": ("", ""),
    "inductor-max-autotune": ('mode="max-autotune-no-cudagraphs"', ', mode="max-autotune-no-cudagraphs"'),
    "inductor-reduce-overhead": ('mode="reduce-overhead"', ', mode="reduce-overhead"'),
}


def baseline_candidate(task: Task, name: str) -> Candidate:
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
    if name == "eager":
        tail = _EAGER
    else:
        args, kw = BASELINES[name]
        tail = _COMPILED.format(args=args, kw=kw)
    source = task.source.rstrip() + "\n\nimport torch  # noqa: E402\n" + tail
    return Candidate(source=source, origin=Origin.baseline(name), round=0)
