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

from torch_cudal1.engines import output_layouts as _cudal1_layouts  # noqa: E402


class ModelNew(Model):
    """Baseline: the reference through torch.compile({args}), its outputs in eager's layout
    where eager's is contiguous (engines/output_layouts.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cudal1_compiled = torch.compile(self._cudal1_reference{kw})
        self._cudal1_fix = None

    def _cudal1_reference(self, *inputs):
        return Model.forward(self, *inputs)

    def forward(self, *inputs):
        out = self._cudal1_compiled(*inputs)
        if self._cudal1_fix is None:
            self._cudal1_fix = _cudal1_layouts.outputs_to_fix(
                out, _cudal1_layouts.eager_contiguous(self._cudal1_reference, inputs))
        if self._cudal1_fix:
            out = _cudal1_layouts.made_contiguous(out, self._cudal1_fix)
        return out
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
