# task: diag_matmul  expect: timer_tampering
import torch
import torch.nn as nn

import torch_cudal1.templates  # noqa: F401 - the verifier imports Dynamo first for such sources


class ModelNew(nn.Module):
    """Mentions the built-in templates (so Dynamo is imported before the verifier's snapshot),
    then replaces torch.manual_seed itself: still tampering."""

    def forward(self, a, b):
        torch.manual_seed = lambda *args, **kwargs: None
        return torch.diag(a) @ b
