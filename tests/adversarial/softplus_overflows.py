# task: linear_softplus  expect: mismatch|nan
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Softplus as log(1 + exp(x)): exp overflows to inf past 88, where softplus is x itself.
    Pre-activations of randn inputs never get there."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.log1p(torch.exp(self.fc(x)))
