# task: diag_matmul  expect: global_state
import gc

import torch.nn as nn

# The garbage collector off for the whole process: a call's cycles are never collected, so
# calls look cheaper, and the serving process's memory grows without bound.
gc.disable()


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
