# task: big_affine  expect: output_aliased
import torch
import torch.nn as nn

RING = 8


class ModelNew(nn.Module):
    """A ring of preallocated output buffers handed out in turn: each result is overwritten
    RING calls later under a caller that kept it, and no call pays for a fresh allocation. The
    outputs are too large for the worker to hold one per batch; a ring longer than a batch
    comes round between batches."""

    def __init__(self):
        super().__init__()
        self.bufs = []
        self.i = 0

    def forward(self, x):
        if not self.bufs:
            self.bufs = [torch.empty_like(x) for _ in range(RING)]
        buf = self.bufs[self.i % RING]
        self.i += 1
        torch.mul(x, 2.0, out=buf)
        return buf.add_(1.0)
