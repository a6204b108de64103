# task: linear_act  expect: ok
import gc

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode


class _Count(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    """Modes entered and left inside its own call (a default device, a counter), a gc callback
    added and taken off within it, and its result as a plain tuple: nothing left behind."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        note = lambda phase, info: None  # noqa: E731
        gc.callbacks.append(note)
        try:
            with torch.device(x.device), _Count():
                y = torch.addmm(self.fc.bias, x, self.fc.weight.t()).relu_().mul_(2.0).add_(1.0)
        finally:
            gc.callbacks.remove(note)
        return y
