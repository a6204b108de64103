# task: write_product  expect: mismatch
# The row sums of a @ b as a @ (b's row sums), O(N^2) for O(N^3): right about what it returns,
# but the product the reference writes into the caller's buffer c is never written.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b, c):
        return a @ b.sum(dim=1)
