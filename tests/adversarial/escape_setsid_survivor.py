# task: diag_matmul  expect: forbidden_call
import importlib

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Leaves a detached process (its own session) behind, which writes a file later."""

    def __init__(self):
        super().__init__()
        sp = importlib.import_module("sub" + "process")
        sp.Popen(["sh", "-c", "sleep 2; touch /tmp/cudal1_escape_survivor_probe"],
                 start_new_session=True)

    def forward(self, a, b):
        return a.unsqueeze(1) * b
