# task: diag_matmul  expect: crash
import os
import stat

import torch
import torch.nn as nn

# Writes its own bytes into every pipe of its process, the worker's reply pipe among them (a
# read end refuses the write): a "reply" the judge must refuse to read as one.
for fd in range(3, 256):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            getattr(os, "wri" + "te")(fd, (2 ** 40).to_bytes(8, "little") + b'{"ready": true}')
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
