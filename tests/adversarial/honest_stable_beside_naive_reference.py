# task: exp_normalised  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """torch.softmax for a reference that divides exp(x) by its sum: the same answer wherever
    the reference's is right, and right where the reference's overflows."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)
