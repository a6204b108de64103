# task: softmax_rows  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Softmax written out, the row's maximum subtracted before exp: right at any magnitude."""

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
