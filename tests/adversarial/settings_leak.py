# task: linear_act  expect: global_state
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest arithmetic, but each call switches process-wide settings and leaves them switched:
    served, it would change the algorithms (and numerics) of the rest of the user's program."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = False
        return torch.relu(self.fc(x)) * 2.0 + 1.0
