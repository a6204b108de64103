# task: same_tensor_twice  expect: ok
# The reference's own code, on one tensor passed as both inputs: the in-place ReLU is seen
# through the second input too, as the caller's eager call sees it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, skip):
        torch.relu_(x)
        return skip + skip
