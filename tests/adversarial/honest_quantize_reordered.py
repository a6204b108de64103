# task: quantize  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same rounding after the scaling in two steps: a few units off where float32's
    rounding falls differently, as the native reference is from float64's."""

    def forward(self, x):
        return torch.round((x * 1e3) * 1e4).to(torch.int32)
