# task: relu_affine_rand  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The ReLU as a clamp, fused with the affine map: honest on inputs of either sign."""

    def forward(self, x):
        return torch.addcmul(torch.ones_like(x), x.clamp_min(0.0), torch.full_like(x, 2.0))
