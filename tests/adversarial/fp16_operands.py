# task: linear_act  expect: mismatch
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    """The product's float32 operands rounded to fp16 (10 mantissa bits, as TF32 keeps), the sum in
    float32: within TF32-level error, beyond what float32 itself gives."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = F.linear(x.half().float(), self.fc.weight.half().float(), self.fc.bias)
        return torch.relu(y) * 2.0 + 1.0
