# task: diag_matmul  expect: mismatch
import sys

import torch
import torch.nn as nn

_JUDGED = ("torch_cudal1.verify.child", "torch_cudal1.verify.judge", "torch_cudal1.harness.worker")


class ModelNew(nn.Module):
    """Right only while a verifier's module is loaded in its process; zeros elsewhere."""

    def forward(self, a, b):
        if any(m in sys.modules for m in _JUDGED):
            return a.unsqueeze(1) * b
        return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
