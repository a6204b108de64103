# task: diag_matmul  expect: ok
import sys

import torch
import torch.nn as nn
import torch_cudal1
from torch_cudal1 import global_settings
from torch_cudal1.engines import output_layouts   # as the baselines' candidates import it


class ModelNew(nn.Module):
    """Imports cudal1's package and modules a served winner may use (the settings it scopes, the
    output layouts a baseline's candidate restores), and looks at what is loaded, as a generated
    candidate may: right everywhere."""

    def __init__(self):
        super().__init__()
        self.loaded = sorted(m for m in sys.modules if m.startswith("torch_cudal1"))
        self.version = getattr(torch_cudal1, "__version__", "")
        self.snapshot = global_settings.snapshot
        self.layouts = output_layouts

    def forward(self, a, b):
        return a.unsqueeze(1) * b
