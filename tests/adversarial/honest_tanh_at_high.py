# task: tanh_rows  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """tanh(x) = 2 sigmoid(2x) - 1, judged at float32 precision "high": honest on inputs of any
    magnitude."""

    def forward(self, x):
        return 2.0 * torch.sigmoid(2.0 * x) - 1.0
