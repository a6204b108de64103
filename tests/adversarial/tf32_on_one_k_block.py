# task: square_matmul  expect: mismatch
import torch
import torch.nn as nn


def _tf32(x):
    i = x.contiguous().view(torch.int32)
    i = (i + 0xFFF + ((i >> 13) & 1)) & ~0x1FFF
    return i.view(torch.float32)


class ModelNew(nn.Module):
    """A split-K product whose last block (a sixteenth of K) runs on TF32 operands: the error of
    one block in sixteen is a quarter of TF32's over the whole product."""

    def forward(self, a, b):
        k = a.shape[1] - a.shape[1] // 16
        return a[:, :k] @ b[:k] + _tf32(a[:, k:]) @ _tf32(b[k:])
