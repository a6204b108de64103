# task: diag_matmul  expect: forbidden_call
import subprocess

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        subprocess.run(["true"])
        return a.unsqueeze(1) * b
