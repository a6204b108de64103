# task: diag_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Draws from a generator of its own (a tie-break it then discards): the global one, which
    the rest of the program draws from, is left alone."""

    def __init__(self):
        super().__init__()
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, a, b):
        torch.rand(4, generator=self.gen)
        return a.unsqueeze(1) * b
