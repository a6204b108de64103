import torch
import torch.nn as nn


class Model(nn.Module):
    """a @ b written into the buffer the caller passes in a list, and its row sums returned."""

    def forward(self, a, b, outs):
        torch.matmul(a, b, out=outs[0])
        return outs[0].sum(dim=1)


N = 96


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N), [torch.randn(N, N)]]


def get_init_inputs():
    return []
