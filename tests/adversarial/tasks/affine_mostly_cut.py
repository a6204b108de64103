import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, minus a constant larger than its outputs, scaled, ReLU: most outputs are cut to
    zero and the rest are small differences of terms near 3 (KernelBench level 2's
    linear-subtract-multiply-ReLU)."""

    def __init__(self, in_features, out_features, subtract, multiply):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract, self.multiply = subtract, multiply

    def forward(self, x):
        return torch.relu((self.linear(x) - self.subtract) * self.multiply)


def get_inputs():
    return [torch.randn(128, 10)]


def get_init_inputs():
    return [10, 5, 2.0, 1.5]
