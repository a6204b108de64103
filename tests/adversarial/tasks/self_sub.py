import torch
import torch.nn as nn


class Model(nn.Module):
    """x - x: the answer is provably zero for every finite input."""

    def forward(self, x):
        return x - x


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
