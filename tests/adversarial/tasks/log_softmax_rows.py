import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise log-softmax (KernelBench level-1 shape)."""

    def forward(self, x):
        return torch.log_softmax(x, dim=1)


def get_inputs():
    return [torch.randn(1024, 2048)]


def get_init_inputs():
    return []
