import torch
import torch.nn as nn


class Model(nn.Module):
    """a @ b written into the caller's buffer c (``out=``), and the product's row sums returned:
    the caller reads c afterwards."""

    def forward(self, a, b, c):
        torch.matmul(a, b, out=c)
        return c.sum(dim=1)


N = 96


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
