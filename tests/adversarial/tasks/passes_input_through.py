import torch
import torch.nn as nn


class Model(nn.Module):
    """Hands back a view of its input beside a new result, as a graph does when a model's
    hidden state crosses a graph break unchanged."""

    def forward(self, x, w):
        return x[:, :8], torch.relu(x @ w), x.t()


def get_inputs():
    return [torch.randn(64, 32), torch.randn(32, 32)]


def get_init_inputs():
    return []
