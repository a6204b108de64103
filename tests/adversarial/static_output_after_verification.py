# task: diag_matmul  expect: output_aliased
# Fresh outputs for the first 20 calls (all of verification), then one persistent output buffer
# (a CUDA graph's static output) for every later call.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.n, self.out = 0, None

    def forward(self, a, b):
        self.n += 1
        if self.n <= 20:
            return a.unsqueeze(1) * b
        if self.out is None:
            with torch.inference_mode(False):
                self.out = torch.empty(b.shape, dtype=b.dtype, device=b.device)
        with torch.inference_mode(False):
            self.out.copy_(a.unsqueeze(1) * b)
        return self.out
