import torch
import torch.nn as nn


class Model(nn.Module):
    """exp(x) over its row's sum, written without the row's maximum subtracted: this reference
    itself overflows on inputs far wider than get_inputs draws."""

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(16, 512)]


def get_init_inputs():
    return []
