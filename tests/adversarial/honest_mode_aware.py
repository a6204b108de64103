# task: diag_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A path of its own under inference mode (no autograd bookkeeping), right under either."""

    def forward(self, a, b):
        if torch.is_inference_mode_enabled():
            return torch.mul(a.unsqueeze(1), b)
        return a.unsqueeze(1) * b
