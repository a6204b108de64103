# task: norm_value_f64  expect: mismatch
# The product in float64, its norm from the product rounded to float32: the Python float it
# returns is off by float32's rounding, far outside float64's bound.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        p = a @ b
        return p, float(torch.linalg.matrix_norm(p.float()))
