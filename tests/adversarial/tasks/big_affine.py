import torch
import torch.nn as nn


class Model(nn.Module):
    """An elementwise affine map of an activation too large (48 MB) for the worker to hold
    outputs of several calls across batches."""

    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(3000, 4000)]


def get_init_inputs():
    return []
