# task: linear_act  expect: ok
import tempfile

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uses a temporary file (its own temporary directory) and torch.compile (its own inductor
    cache): both legitimate, both kept out of what other processes read."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("scratch")
            f.flush()
        self.act = torch.compile(lambda y: torch.relu(y) * 2.0 + 1.0)

    def forward(self, x):
        return self.act(self.fc(x))
