# task: linear_act  expect: ok
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Hooks on its own submodule and a garbage collection at construction: neither touches the
    reference, so neither the canary nor the heap-walk rule may object."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.fc.register_forward_hook(lambda module, args, out: torch.relu(out) * 2.0 + 1.0)
        gc.collect()

    def forward(self, x):
        return self.fc(x)
