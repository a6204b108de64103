# task: write_into_list  expect: ok
# Writes the product into the caller's buffer in the list, as the reference does.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b, outs):
        torch.mm(a, b, out=outs[0])
        return outs[0].sum(dim=1)
