# task: write_product  expect: ok
# Writes the product into the caller's buffer as the reference does, through another call.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b, c):
        torch.mm(a, b, out=c)
        return c.sum(dim=1)
