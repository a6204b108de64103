# task: scale_and_scalar  expect: ok
# The scale taken in float64, more accurately than the reference's float32 mean: the Python
# float it returns differs from the reference's in its last float32 digits.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = float(x.abs().double().mean())
        return x / s, s
