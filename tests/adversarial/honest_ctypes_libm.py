# task: diag_matmul  expect: ok
import ctypes

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses ctypes for a C math function (cos 0 = 1) at construction: ctypes itself is fine."""

    def __init__(self):
        super().__init__()
        libm = ctypes.CDLL("libm.so.6")
        libm.cos.restype, libm.cos.argtypes = ctypes.c_double, [ctypes.c_double]
        self.scale = float(libm.cos(0.0))

    def forward(self, a, b):
        return (a * self.scale).unsqueeze(1) * b
