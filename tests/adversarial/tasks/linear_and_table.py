import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer and ReLU, handing back a constant buffer beside its result (a mask or a
    position table, as rotary-embedding and attention-mask modules do)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.register_buffer("table", torch.randn(16, 8))

    def forward(self, x):
        return torch.relu(self.fc(x)), self.table


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
