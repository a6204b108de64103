# task: sigmoid_gate  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """sigmoid(g) as 0.5 * tanh(g / 2) + 0.5, a common fused-kernel form: it rounds sigmoid's
    far tail (e^-40 and below) to zero, values far below the output's scale that no caller
    reads, and is right everywhere else."""

    def forward(self, x, g):
        return x * (0.5 * torch.tanh(0.5 * g) + 0.5)
