# task: sort_rows_f64  expect: input_mutated
# Leaves the caller's float64 input negated. Flipping a float64's sign adds 2^63 to its 64-bit
# word, which a sum of words weighted by their places (mod 2^64) cancels in pairs: the input's
# bytes must be compared, not a linear sum of them.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.sort(x, dim=-1).values
        x.neg_()
        return out
