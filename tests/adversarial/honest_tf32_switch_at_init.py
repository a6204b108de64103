# task: transpose  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Allows TF32 through the legacy per-backend attributes in __init__, as 39 of CUDA-L1's
    solutions do: its own calls get them, and the caller's settings come back exactly (a legacy
    setter rewrites other per-backend values, "none" -> "ieee": those too)."""

    def __init__(self):
        super().__init__()
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def forward(self, x):
        assert torch.backends.cuda.matmul.allow_tf32
        return (x * 3.0).t()
