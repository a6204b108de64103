import torch
import torch.nn as nn


class Model(nn.Module):
    """a @ b in float64, and its Frobenius norm as a Python float."""

    def forward(self, a, b):
        p = a @ b
        return p, torch.linalg.matrix_norm(p).item()


def get_inputs():
    return [torch.randn(64, 64, dtype=torch.float64), torch.randn(64, 64, dtype=torch.float64)]


def get_init_inputs():
    return []
