import torch
import torch.nn as nn


class Model(nn.Module):
    """A forward that works on its input in place (``relu_``), then scales it."""

    def forward(self, x):
        x.relu_()
        return x * 2.0


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
