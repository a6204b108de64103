import torch
import torch.nn as nn


class Model(nn.Module):
    """log(p) + relu(h), both inputs drawn with torch.rand: negated together, the log has no
    answer."""

    def forward(self, p, h):
        return torch.log(p) + torch.relu(h)


def get_inputs():
    return [torch.rand(128, 256), torch.rand(128, 256)]


def get_init_inputs():
    return []
