# task: log_prob_plus_relu  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same sum with the ReLU as a clamp, added in place into the log: honest."""

    def forward(self, p, h):
        return torch.log(p).add_(h.clamp_min(0.0))
