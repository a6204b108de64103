# task: diag_matmul  expect: global_state
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right values, but every call reseeds the global generator: served, each later
    torch.randn or dropout of the user's program repeats the same numbers."""

    def forward(self, a, b):
        torch.manual_seed(0)
        return a.unsqueeze(1) * b
