# task: linear_act  expect: ok
import os
import pathlib

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Caches a compiled kernel where CuPy does: ``$CUPY_CACHE_DIR``, else ``~/.cupy/kernel_cache``
    (a CUDA-L1 solution built with CuPy was refused for writing there). Engine code gets that
    cache inside its own build directory, so it is legitimate and stays out of the user's home."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        cache = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
        os.makedirs(cache, exist_ok=True)
        # through Python's file objects, as CuPy writes its cache (seen by the run-time guard)
        pathlib.Path(cache, "cudal1_probe.cubin").write_bytes(b"\x7fELF")

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0 + 1.0
