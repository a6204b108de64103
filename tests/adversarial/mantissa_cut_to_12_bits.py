# task: square_matmul  expect: mismatch
import torch
import torch.nn as nn


def _keep_bits(x, bits):
    """float32 rounded to ``bits`` mantissa bits (to nearest, ties even) through its bit pattern."""
    drop = 23 - bits
    i = x.contiguous().view(torch.int32)
    i = (i + ((1 << (drop - 1)) - 1) + ((i >> drop) & 1)) & ~((1 << drop) - 1)
    return i.view(torch.float32)


class ModelNew(nn.Module):
    """Operands cut to 12 mantissa bits (TF32's ten and two more), products summed in float32:
    about 300 times float32's own error, under a bound made for TF32's."""

    def forward(self, a, b):
        return _keep_bits(a, 12) @ _keep_bits(b, 12)
