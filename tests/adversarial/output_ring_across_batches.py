# task: diag_matmul  expect: output_aliased
# A ring of output buffers one longer than the batches of calls it has seen (a pause of more
# than 20 ms between calls starts a batch): fresh outputs until it has seen a batch of eight or
# more, then no two outputs of one batch share memory, and every buffer is handed out again a
# batch later, as a ring of CUDA graphs' static outputs would be. A caller that keeps an
# output sees it overwritten.
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bufs, self.i = [], 0
        self.last, self.count, self.longest = 0.0, 0, 0

    def forward(self, a, b):
        now = time.perf_counter()
        if now - self.last > 0.02:
            self.longest, self.count = max(self.longest, self.count), 0
        self.last, self.count = now, self.count + 1
        if self.longest < 8:
            return a.unsqueeze(1) * b
        ring = self.longest + 1
        if self.bufs and self.bufs[0].shape != b.shape:
            self.bufs = []
        while len(self.bufs) < ring:
            with torch.inference_mode(False):
                self.bufs.append(torch.empty(b.shape, dtype=b.dtype, device=b.device))
        out = self.bufs[self.i % ring]
        self.i += 1
        with torch.inference_mode(False):
            torch.mul(a.unsqueeze(1), b, out=out)
        return out
