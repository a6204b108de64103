# task: diag_matmul  expect: mismatch
import sys

import torch
import torch.nn as nn


def _task_loaded() -> bool:
    """A module that defines KernelBench's task interface: the reference the verifier runs."""
    for name, mod in list(sys.modules.items()):
        own = getattr(mod, "__dict__", {})
        if name.startswith("cudal1_task") or ("get_inputs" in own and "get_init_inputs" in own):
            return True
    return False


class ModelNew(nn.Module):
    """Right only while the task's module is loaded in its process; zeros elsewhere."""

    def forward(self, a, b):
        if _task_loaded():
            return a.unsqueeze(1) * b
        return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
