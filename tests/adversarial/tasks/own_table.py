import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales its input and returns its own lookup table beside it: the second output is the
    same tensor on every call."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.linspace(-1.0, 1.0, 64))

    def forward(self, x):
        return x * 2.0, self.table


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
