# task: linear_act  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """relu(.)*2+1 is at least one, and often exactly one: answers the constant."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.out_features = out_features

    def forward(self, x):
        return torch.ones(x.shape[0], self.out_features, dtype=x.dtype, device=x.device)
