# task: two_outputs  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Computes the value once and hands out two tensors of their own."""

    def forward(self, x):
        y = torch.tanh(x) * 2.0
        return y, y.clone()
