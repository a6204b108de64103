# task: diag_matmul  expect: output_aliased
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Writes every result into one persistent buffer and returns it (a static CUDA-graph output
    returned without a copy behaves the same): an earlier result changes under its caller."""

    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, a, b):
        if self.out is None or self.out.shape != b.shape:
            self.out = torch.empty_like(b)
        torch.mul(a.unsqueeze(1), b, out=self.out)
        return self.out
