# task: sort_rows_f64  expect: input_mutated
# Sorts the caller's tensor in place and returns a copy: the caller's input is left sorted.
# Moving 8-byte values keeps the plain sum of the buffer's 64-bit words, so a sum over the
# input cannot see it; where the values are matters.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x.copy_(torch.sort(x, dim=-1).values)
        return x.clone()
