# task: diag_matmul  expect: ok
import sys

import torch
import torch.nn as nn
import torch_cudal1
from torch_cudal1 import global_settings


class ModelNew(nn.Module):
    """Imports cudal1's package and one of its modules a served winner may use (the settings it
    scopes), and looks at what is loaded, as a generated candidate may: right everywhere."""

    def __init__(self):
        super().__init__()
        self.loaded = sorted(m for m in sys.modules if m.startswith("torch_cudal1"))
        self.version = getattr(torch_cudal1, "__version__", "")
        self.snapshot = global_settings.snapshot

    def forward(self, a, b):
        return a.unsqueeze(1) * b
