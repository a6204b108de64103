# task: passes_input_through  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same views of the input as the reference, the product through addmm's fused path."""

    def forward(self, x, w):
        y = torch.addmm(x.new_zeros(()), x, w).clamp_min_(0)
        return x[:, :8], y, x.t()
