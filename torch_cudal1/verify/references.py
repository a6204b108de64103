"""Each input draw's reference answers, kept while they fit, else recomputed when asked for.

The verifier compares the candidate with the reference on every draw several times over (the
draws themselves, a shuffled repeat, refilled buffers, other RNG states, checks during timing).
Keeping every draw's answers — in the native dtype and in float64 — beside the candidate's outputs
and their snapshots takes about five times a draw's output per draw: three draws of a graph with
an 8.6 GB output (KernelBench L2_34) needed about 130 GB and did not fit an H200 with the GPU to
itself. Past a budget (a quarter of the device's memory) the answers are computed again from the
draw's buffers each time they are needed — always consistent with what the buffers hold — and
the candidates' snapshots are kept in host memory instead.
"""
from __future__ import annotations

import os

import torch

from ..options import env
from .compare import flatten_outputs

SHARE = 0.25                        # of the device's memory, for what the verifier keeps
BUDGET_ENV = "CUDAL1_VERIFY_KEEP_BYTES"   # a budget in bytes instead (tests, small devices)


def nbytes(*outs) -> int:
    return sum(t.numel() * t.element_size() for o in outs for t in flatten_outputs(o)
               if isinstance(t, torch.Tensor))


def budget_bytes(device: str) -> int:
    if env(BUDGET_ENV):
        return int(env(BUDGET_ENV))
    if str(device).startswith("cuda"):
        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
    else:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(SHARE * total)


class References:
    """A list of (native, float64) answers per draw: ``compute(k)`` answers draw k as its
    buffers are now. ``fit`` decides once, from draw 0, whether the answers are kept."""

    def __init__(self, compute, device: str):
        self._compute = compute
        self._device = device
        self._kept: list = []
        self._n = 0
        self.keep = True

    def fit(self, n_draws: int, answer, output) -> bool:
        """Keep the answers when every draw's answer, output and snapshot fit the budget."""
        need = n_draws * (nbytes(*answer) + 2 * nbytes(output))
        self.keep = need <= budget_bytes(self._device)
        return self.keep

    def append(self, answer) -> None:
        if self.keep:
            self._kept.append(answer)
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: int):
        k = range(self._n)[k]
        return self._kept[k] if self.keep else self._compute(k)

    def __setitem__(self, k: int, answer) -> None:
        if self.keep:
            self._kept[range(self._n)[k]] = answer

    def __iter__(self):
        return (self[k] for k in range(self._n))

    def kept(self, k: int):
        """The answer as kept (None where answers are recomputed): what draw k's buffers held
        before they were refilled."""
        return self._kept[k] if self.keep else None

    def snapshot_home(self, snap):
        """Where a snapshot kept for later comparison lives: host memory once answers are
        recomputed (the device is short of room), else where it was taken."""
        if self.keep:
            return snap
        return [t.cpu() if isinstance(t, torch.Tensor) else t for t in flatten_outputs(snap)]
