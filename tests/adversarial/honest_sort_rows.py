# task: sort_rows_f64  expect: ok
# The sort on a copy: the input stays as the caller gave it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=-1).values
