# task: log_relu  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """+inf where the reference gives -inf: non-finite in the same places, but another answer
    (exp() of it is inf, not 0)."""

    def forward(self, x):
        return torch.where(x > 0, torch.log(x), torch.full_like(x, float("inf")))
