# task: log_rand  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """log1p of the shifted input: honest where the reference has an answer; its inputs
    negated leave the reference NaN, where nothing is asked of a candidate."""

    def forward(self, x):
        return torch.log1p(x - 0.5)
