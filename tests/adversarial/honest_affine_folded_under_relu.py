# task: affine_mostly_cut  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The subtraction and the scale folded into the weight and bias once (one addmm and an
    in-place ReLU): float32 rounds in another order than the reference, by about a unit of the
    terms near 3, on outputs that are mostly zero."""

    def __init__(self, in_features, out_features, subtract, multiply):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        with torch.no_grad():
            self.register_buffer("w_t", (self.linear.weight * multiply).t())
            self.register_buffer("b", (self.linear.bias - subtract) * multiply)

    def forward(self, x):
        return torch.addmm(self.b, x, self.w_t).relu_()
