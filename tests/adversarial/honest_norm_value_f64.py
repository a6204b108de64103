# task: norm_value_f64  expect: ok
# The same norm from the product's squares, in float64 throughout.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        p = a @ b
        return p, float(torch.sqrt(torch.square(p).sum()))
