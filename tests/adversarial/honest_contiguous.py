# task: transpose  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Same values as the reference's transposed view, returned contiguous (strides differ)."""

    def forward(self, x):
        return (x.t() * 3.0).contiguous()
