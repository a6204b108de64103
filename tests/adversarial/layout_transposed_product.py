# task: linear_act  expect: stride
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The product taken as (W x^T)^T and returned as that transposed view: right values,
    another layout than the reference's contiguous result."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.addmm(self.fc.bias.unsqueeze(1), self.fc.weight, x.t()).t()
        return torch.relu(y) * 2.0 + 1.0
