# task: diag_matmul  expect: mismatch|nondeterministic|stale_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right under torch.no_grad() (how a verifier calls it), zeros under inference mode."""

    def forward(self, a, b):
        if torch.is_inference_mode_enabled():
            return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
        return a.unsqueeze(1) * b
