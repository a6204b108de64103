# task: sliced_rows  expect: ok
# tanh of the view, the caller's buffer only read.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x.contiguous())
