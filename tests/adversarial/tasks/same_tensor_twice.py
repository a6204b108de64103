import torch
import torch.nn as nn


class Model(nn.Module):
    """Works in place on its first input, and returns its second scaled: called with one tensor
    as both, as a residual block's caller may."""

    def forward(self, x, skip):
        x.relu_()
        return skip * 2.0


def get_inputs():
    t = torch.randn(32, 64)
    return [t, t]


def get_init_inputs():
    return []
