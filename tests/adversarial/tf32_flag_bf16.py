# task: linear_act  expect: mismatch
import torch
import torch.nn as nn

# Loosens the process-wide matmul precision (which would also loosen a reference run in the same
# process, and the tolerance derived from it), then computes in bfloat16.
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("medium")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.nn.functional.linear(x.bfloat16(), self.fc.weight.bfloat16(), self.fc.bias.bfloat16())
        return (torch.relu(y) * 2.0 + 1.0).float()
