# task: log_relu  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """-inf exactly where the reference has it, by another route."""

    def forward(self, x):
        return torch.log(torch.clamp_min(x, 0.0))
