"""The reference's answer to an input no candidate ever sees, taken before any candidate code runs.

Candidate and reference share one interpreter, so a candidate can change what the reference
computes: rebind an op the reference calls, or find the reference model (up the call stack from
a traceback's frame, say) and overwrite its weights, or only its float64 copy's, which loosens
every tolerance. Then both agree
on wrong answers and every check passes. The canary is one fresh draw's answers, native and
float64, sampled at random positions, taken before the candidate is imported; later the draw is
made again from its seed and the reference must give the same answers. Rebinding is caught after
every call by ``guards.reach``; this catches what leaves names alone (weights, code objects).
"""
from __future__ import annotations

import torch

from .compare import compare, flatten_outputs

SAMPLES = 1 << 16   # positions kept per output tensor (all of them in smaller outputs)


def _positions(out, gen: torch.Generator) -> list:
    idx = []
    for o in flatten_outputs(out):
        if isinstance(o, torch.Tensor) and o.numel() > SAMPLES:
            flat = torch.randint(o.numel(), (SAMPLES,), generator=gen)
            idx.append(torch.unravel_index(flat, o.shape))
        else:
            idx.append(None)
    return idx


def _sample(out, idx: list) -> list:
    res = []
    for o, i in zip(flatten_outputs(out), idx):
        if not isinstance(o, torch.Tensor):
            res.append(o)
        elif i is None:
            res.append(o.detach().reshape(-1).clone())
        else:
            res.append(o.detach()[tuple(x.to(o.device) for x in i)].clone())
    return res


class Canary:
    """``answer()`` -> (native output, float64 output or None) for the canary draw, from the
    reference's state at construction; called once at ``take`` and again at every ``check``."""

    def __init__(self, answer, seed: int):
        self.answer = answer
        self.gen = torch.Generator().manual_seed(seed)
        self.idx: list | None = None
        self.native = self.hi = None
        self.off = ""   # why the canary is not used ("" when it is)

    def _sampled(self):
        native, hi = self.answer()
        if self.idx is None:
            self.idx = _positions(native, self.gen)
        return _sample(native, self.idx), (_sample(hi, self.idx) if hi is not None else None)

    def take(self) -> None:
        """Twice: a reference that answers one input two ways (random draws in its forward) has
        no canary, rather than a false alarm."""
        self.native, self.hi = self._sampled()
        if self._differs(*self._sampled()):
            self.off = "the reference answers one input differently from call to call"
            self.native = self.hi = None

    def _differs(self, native, hi) -> str:
        reason, detail, _ = compare(self.native, native, self.hi)
        if reason != "ok":
            return f"{reason}: {detail}"
        if self.hi is not None and hi is not None:
            reason, detail, _ = compare(self.hi, hi, self.hi)
            if reason != "ok":
                return f"its float64 copy: {reason}: {detail}"
        elif (self.hi is None) != (hi is None):
            return "its float64 copy stopped running"
        return ""

    def check(self) -> str:
        """'' while the reference answers as before any candidate code ran, else how it differs."""
        if self.off or self.native is None:
            return ""
        return self._differs(*self._sampled())
