import torch
import torch.nn as nn


class Model(nn.Module):
    """diag(a) @ b"""

    def forward(self, a, b):
        return torch.diag(a) @ b


N, M = 64, 48


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
