# task: diag_matmul  expect: no_model_new
import torch
import torch.nn as nn


class ModelFast(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
