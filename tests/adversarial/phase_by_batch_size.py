# task: diag_matmul  expect: forbidden_call
# without the audit hook: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Reads the length of the batch of calls it is part of from its caller's frame: long batches
    are timing, where it answers zeros. (With the audit hook off, the walk finds no batch: the
    harness's loop runs in a thread of its own, so it always answers right.)"""

    def forward(self, a, b):
        try:
            raise RuntimeError
        except RuntimeError as e:
            frame = e.__traceback__.tb_frame
        n = 0
        while frame is not None:
            calls = frame.f_locals.get("calls")
            if isinstance(calls, list):
                n = max(n, len(calls))
            frame = frame.f_back
        if n > 6:
            return torch.zeros(a.shape[0], b.shape[1], dtype=b.dtype, device=b.device)
        return a.unsqueeze(1) * b
