# task: diag_matmul  expect: memory
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        hog = torch.ones(3 * 2**30, dtype=torch.float32)   # 12 GiB
        return a.unsqueeze(1) * b + hog[0] * 0
