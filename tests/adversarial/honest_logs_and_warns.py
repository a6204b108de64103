# task: diag_matmul  expect: ok
import logging
import warnings

import torch.nn as nn

log = logging.getLogger("candidate")


class ModelNew(nn.Module):
    """Logs and warns as ordinary code does: logging and warnings take the caller's frame for
    its file and line, inside the standard library, and hand none back."""

    def __init__(self):
        super().__init__()
        log.warning("built")
        warnings.warn("a candidate's warning", stacklevel=2)

    def forward(self, a, b):
        log.debug("called")
        return a.unsqueeze(1) * b
