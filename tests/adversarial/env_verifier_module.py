# task: diag_matmul  expect: mismatch
import sys

import torch
import torch.nn as nn

# cudal1's harness and verifier, whatever the module (the judge, the worker, their helpers)
_VERIFIER = ("torch_cudal1.verify", "torch_cudal1.harness", "torch_cudal1.bench")


class ModelNew(nn.Module):
    """Right only while a module of the verifier or of its harness is loaded in its process;
    zeros elsewhere (a process serving a cached winner loads none of them)."""

    def forward(self, a, b):
        if any(m.startswith(_VERIFIER) for m in list(sys.modules)):
            return a.unsqueeze(1) * b
        return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
