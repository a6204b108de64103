# task: linear_act  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """addmm with a cached transposed weight (invalidated by the weight's version counter),
    then the activation chain in place on its own intermediate."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self._wt = None
        self._wt_key = None

    def forward(self, x):
        w = self.fc.weight
        key = (w.data_ptr(), w._version)
        if self._wt is None or self._wt_key != key:
            self._wt = w.t().contiguous()
            self._wt_key = key
        y = torch.addmm(self.fc.bias, x, self._wt)
        return y.clamp_min_(0.0).mul_(2.0).add_(1.0)
