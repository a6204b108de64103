# task: write_into_list  expect: mismatch
# The row sums of a @ b as a @ (b's row sums), the product never written into the caller's
# buffer passed in a list.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b, outs):
        return a @ b.sum(dim=1)
