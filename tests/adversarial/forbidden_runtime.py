# task: diag_matmul  expect: forbidden_call
import importlib

import torch
import torch.nn as nn

_sp = importlib.import_module("sub" + "process")   # hidden from the static filter


class ModelNew(nn.Module):
    def forward(self, a, b):
        _sp.run(["true"])
        return a.unsqueeze(1) * b
