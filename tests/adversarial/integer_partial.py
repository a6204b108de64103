# task: quantize  expect: mismatch
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Integer output whose float32 and float64 roundings differ in many places: the last fifth
    of the rows is left uncomputed (zeros), hoping to pass as rounding flips."""

    def forward(self, x):
        out = torch.zeros(x.shape, dtype=torch.int32, device=x.device)
        n = int(x.shape[0] * 0.8)
        out[:n] = torch.round(x[:n] * 1e7).to(torch.int32)
        return out
