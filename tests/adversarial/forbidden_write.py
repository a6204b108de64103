# task: diag_matmul  expect: forbidden_call
import builtins
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Writes outside its work and build directories (the name is hidden from the static filter)."""

    def forward(self, a, b):
        path = os.path.join(os.path.expanduser("~"), "cudal1_forbidden_write_probe")
        with getattr(builtins, "op" + "en")(path, "w") as f:
            f.write("x")
        return a.unsqueeze(1) * b
