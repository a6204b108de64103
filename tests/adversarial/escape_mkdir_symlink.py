# task: diag_matmul  expect: forbidden_call
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Makes a folder and a symbolic link outside its folders."""

    def __init__(self):
        super().__init__()
        try:
            getattr(os, "mk" + "dir")("/tmp/cudal1_escape_mkdir_probe")
        finally:
            getattr(os, "sym" + "link")("/etc/hostname", "/tmp/cudal1_escape_symlink_probe")

    def forward(self, a, b):
        return a.unsqueeze(1) * b
