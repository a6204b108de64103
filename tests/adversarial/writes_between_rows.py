# task: sliced_rows  expect: input_mutated
# Uses the caller's memory between the input's rows (the other half of each row of the buffer
# the input is a view of) as scratch: the input's own elements are left as they were.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        rows, width = x.shape[0], x.stride(0)
        whole = x.as_strided((rows, width), (width, 1))
        scratch = whole[:, x.shape[1]:2 * x.shape[1]]
        torch.tanh(x, out=scratch)
        return scratch.clone()
