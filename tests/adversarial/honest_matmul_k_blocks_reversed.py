# task: square_matmul  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Float32 throughout, K in six blocks summed last to first: another order, same precision."""

    def forward(self, a, b):
        step = a.shape[1] // 6
        out = None
        for j in reversed(range(0, a.shape[1], step)):
            p = a[:, j:j + step] @ b[j:j + step]
            out = p if out is None else out + p
        return out
