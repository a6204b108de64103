# task: diag_matmul  expect: build_error
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b)
        return a.unsqueeze(1) * b
