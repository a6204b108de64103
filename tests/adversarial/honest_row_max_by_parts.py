# task: row_max  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """amax and argmax, handed back as the named tuple torch.max returns."""

    def forward(self, x):
        return torch.return_types.max((x.amax(dim=1), x.argmax(dim=1)))
