# task: row_sum  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row sums as per-chunk partial sums (64 columns each) added in float32, the way a block
    reduction does."""

    def forward(self, x):
        return x.view(x.shape[0], -1, 64).sum(2).flip(1).sum(1)
