import torch
import torch.nn as nn


class Model(nn.Module):
    """x divided by its mean absolute value, and that scale as a Python float."""

    def forward(self, x):
        s = x.abs().mean().item()
        return x / s, s


def get_inputs():
    return [torch.randn(128, 256)]


def get_init_inputs():
    return []
