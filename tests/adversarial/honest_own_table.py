# task: own_table  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Returns its table as the reference does (the same tensor every call): a result shared
    across calls the reference shares too is its behaviour, not a cache."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.linspace(-1.0, 1.0, 64))

    def forward(self, x):
        return x + x, self.table
