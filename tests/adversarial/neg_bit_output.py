# task: neg_relu_transposed  expect: lazy_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """relu(x) with PyTorch's lazy negation bit set: a plain torch.Tensor whose negation is done
    later by whoever reads it (the harness's copy into its slot, the caller's next op)."""

    def forward(self, x):
        return torch._neg_view(torch.relu(x)).t()
