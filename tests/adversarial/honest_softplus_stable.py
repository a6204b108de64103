# task: linear_softplus  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Softplus as max(x, 0) + log1p(exp(-|x|)): no overflow at any magnitude."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.fc(x)
        return y.clamp(min=0) + torch.log1p(torch.exp(-y.abs()))
