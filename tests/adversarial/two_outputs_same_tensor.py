# task: two_outputs  expect: output_aliased
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The two outputs are equal, so it computes one and hands it out twice: a caller's in-place
    update of one changes the other."""

    def forward(self, x):
        y = torch.tanh(x) * 2.0
        return y, y
