# task: linear_act  expect: ok
import torch
import torch.nn as nn

# Switched at import, as many generated kernels do: kept to this module's own calls.
torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    """Sets global switches in __init__ too (about one in five of CUDA-L1's KernelBench solutions
    do): legitimate for its own calls, which is all they are allowed to affect."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False

    def forward(self, x):
        assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
        return torch.relu(self.fc(x)) * 2.0 + 1.0
