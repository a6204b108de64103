# task: diag_matmul  expect: ok
import weakref

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Counts the inputs still alive with a finaliser on each (a pool that returns buffers when
    the caller lets go does the same): the finalisers run in whichever thread lets the input go,
    the harness's among them, and take no frame."""

    def __init__(self):
        super().__init__()
        self.alive = [0]

    def forward(self, a, b):
        self.alive[0] += 1
        weakref.finalize(a, self._gone, self.alive)
        return a.unsqueeze(1) * b

    @staticmethod
    def _gone(alive):
        alive[0] -= 1
