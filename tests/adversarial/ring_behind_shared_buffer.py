# task: linear_and_table  expect: output_aliased
# output_ring_across_batches.py behind a buffer the reference hands back on every call (its
# constant table): the table's memory is rightly the same on every call, and that spares only
# the table from the checks across calls, not the ring of results beside it.
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.register_buffer("table", torch.randn(16, 8))
        self.bufs, self.i = [], 0
        self.last, self.count, self.longest = 0.0, 0, 0

    def forward(self, x):
        now = time.perf_counter()
        if now - self.last > 0.02:
            self.longest, self.count = max(self.longest, self.count), 0
        self.last, self.count = now, self.count + 1
        if self.longest < 8:
            return torch.relu(self.fc(x)), self.table
        ring = self.longest + 1
        shape = (x.shape[0], self.fc.out_features)
        if self.bufs and self.bufs[0].shape != shape:
            self.bufs = []
        while len(self.bufs) < ring:
            with torch.inference_mode(False):
                self.bufs.append(torch.empty(shape, dtype=x.dtype, device=x.device))
        out = self.bufs[self.i % ring]
        self.i += 1
        with torch.inference_mode(False):
            torch.addmm(self.fc.bias.detach(), x, self.fc.weight.detach().t(), out=out)
            out.relu_()
        return out, self.table
