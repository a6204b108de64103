# task: diag_matmul  expect: ok
import torch
import torch.nn as nn
import torch.utils._pytree as pytree


@torch.jit.script
def _scale_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.unsqueeze(1) * b


class ModelNew(nn.Module):
    """Library code that runs this file's callables (pytree's tree_map) and takes frames by name
    (TorchScript reads the caller's frame to resolve names): honest."""

    def forward(self, a, b):
        a, b = pytree.tree_map(lambda t: t.contiguous(), (a, b))
        return _scale_rows(a, b)
