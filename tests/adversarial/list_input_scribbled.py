# task: list_inputs  expect: input_mutated
# Uses the tensors the caller passed in a list as scratch: the weights are scaled and scaled
# back in place (their values rounded), the bias block negated twice.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, extras):
        w, b = extras
        out = x @ w
        out += b.sum(dim=0)
        b.mul_(-1.0)
        b.mul_(-1.0)
        w.mul_(3.0).div_(3.0)
        return out
