# task: tanh_half  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """tanh inside |x| < 6, which randn never leaves, and 0 outside (where it is +-1): wrong on
    the activations of a real model. Half-precision data, where products may round below
    float32: the wide draw holds it to the bounds because the float16 reference holds there."""

    def forward(self, x):
        return torch.where(x.abs() < 6, torch.tanh(x), torch.zeros((), dtype=x.dtype))
