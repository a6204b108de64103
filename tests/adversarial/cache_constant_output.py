# task: softmax_unit  expect: output_aliased
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """softmax over a size-1 dimension is exactly one, so the answer is made once and the same
    tensor returned on every call: right each time, yet a caller's in-place update of one result
    (``y += residual``) changes every later one."""

    def __init__(self):
        super().__init__()
        self.ones = {}

    def forward(self, x):
        key = (x.shape, x.dtype, x.device)
        if key not in self.ones:
            self.ones[key] = torch.ones_like(x)
        return self.ones[key]
