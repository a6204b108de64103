# task: diag_matmul  expect: crash
import os
import sys

import torch
import torch.nn as nn

# Writes its own bytes into the worker's reply pipe (its file descriptors are in sys.argv): a
# "reply" the judge must refuse to read as one.
for arg in sys.argv[1:]:
    try:
        getattr(os, "wri" + "te")(int(arg), (2 ** 40).to_bytes(8, "little") + b'{"ready": true}')
    except (ValueError, OSError):
        pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
