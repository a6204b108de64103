# task: diag_matmul  expect: forbidden_call
import builtins

import torch.nn as nn


class ModelNew(nn.Module):
    """Writes into the machine's shared temporary directory, where torch.compile keeps its
    caches by default (/tmp/torchinductor_<user>)."""

    def forward(self, a, b):
        with getattr(builtins, "op" + "en")("/tmp/cudal1_shared_tmp_probe", "w") as f:
            f.write("x")
        return a.unsqueeze(1) * b
