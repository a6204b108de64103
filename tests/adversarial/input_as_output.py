# task: copy_out  expect: output_aliased
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Skips the copy and hands out the input itself: equal values, but a caller writing to the
    result would change its input."""

    def forward(self, x):
        return x, torch.tanh(x)
