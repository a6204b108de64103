# task: softmax_rows  expect: mismatch
import torch
import torch.nn as nn

# 2^f on [-1/2, 1/2] by a cubic (relative error ~1.4e-4; float32's exp is ~1e-7)
_CUBIC = (0.055029266, 0.242256982, 0.693253055, 0.999951339)


class ModelNew(nn.Module):
    """Softmax with the exponential from a range reduction and a cubic."""

    def forward(self, x):
        t = (x - x.amax(dim=-1, keepdim=True)) * 1.4426950408889634
        n = torch.round(t)
        f = t - n
        p = torch.full_like(f, _CUBIC[0])
        for c in _CUBIC[1:]:
            p = p * f + c
        e = torch.ldexp(p, n.to(torch.int32))
        return e / e.sum(dim=-1, keepdim=True)
