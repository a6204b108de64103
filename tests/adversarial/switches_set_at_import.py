# task: linear_act  expect: global_state
import torch
import torch.nn as nn

# One intra-op thread for the whole process, set when the module is imported: a served winner
# would leave the user's program on one core.
torch.set_num_threads(1)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0 + 1.0
