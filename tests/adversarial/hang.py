# task: diag_matmul  expect: timeout
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        while True:
            pass
