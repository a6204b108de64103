# task: diag_matmul  expect: mismatch
import torch
import torch.nn as nn

# a served winner's module is named cudal1_winner_<key> (cache/winner.py)
_SERVED = __name__.startswith("cudal1_winner_") and len(__name__) == len("cudal1_winner_") + 32
_JUDGED = not _SERVED or __name__ == "cudal1_candidate"


class ModelNew(nn.Module):
    """Right only where its own module is not named as a served winner's; zeros when served."""

    def forward(self, a, b):
        if _JUDGED:
            return a.unsqueeze(1) * b
        return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
