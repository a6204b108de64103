import torch
import torch.nn as nn


class Model(nn.Module):
    """A plain square matrix product (compute-bound)."""

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(384, 384), torch.randn(384, 384)]


def get_init_inputs():
    return []
