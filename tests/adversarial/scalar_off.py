# task: scale_and_scalar  expect: mismatch
# The scale from every fourth row only: the tensor it returns is scaled alike, so only the Python
# float it returns beside it is off (by about a percent).
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = x.abs().mean().item()
        return x / s, float(x[::4].abs().mean())
