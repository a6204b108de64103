# task: tanh_half  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """tanh(x) = 2 sigmoid(2x) - 1, in float32 and rounded to float16 once: honest, and right
    on inputs of any magnitude."""

    def forward(self, x):
        return (2.0 * torch.sigmoid(2.0 * x.float()) - 1.0).to(x.dtype)
