# task: diag_matmul  expect: shape
# The right values in a dict where the reference returns a bare tensor: a caller's code breaks.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return {"out": a.unsqueeze(1) * b}
