import torch
import torch.nn as nn


class Model(nn.Module):
    """The log of inputs the task draws positive: no answer for negative ones."""

    def forward(self, x):
        return torch.log(x + 0.5)


def get_inputs():
    return [torch.rand(256, 512)]


def get_init_inputs():
    return []
