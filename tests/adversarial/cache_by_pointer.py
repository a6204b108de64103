# task: diag_matmul  expect: stale_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Results cached by the inputs' addresses and shapes."""

    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        if key not in self.cache:
            self.cache[key] = a.unsqueeze(1) * b
        return self.cache[key].clone()
