# task: relu_in_place  expect: ok
# Works on its input in place exactly as the reference does: the caller's tensor is left as the
# reference leaves it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        torch.clamp_(x, min=0.0)
        return x + x
