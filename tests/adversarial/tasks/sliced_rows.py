import torch
import torch.nn as nn


class Model(nn.Module):
    """tanh of the first half of each row of a wider buffer (the input is a view: the caller's
    other half sits between its rows)."""

    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(64, 256)[:, :128]]


def get_init_inputs():
    return []
