# task: log_softmax_rows  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=1)
