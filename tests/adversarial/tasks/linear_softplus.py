import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, then softplus (a smooth ReLU: x itself past torch's threshold of 20)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.softplus(self.fc(x))


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 48]
