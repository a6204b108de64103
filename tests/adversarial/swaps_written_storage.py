# task: write_product  expect: input_mutated
# Gives the caller's buffer c other memory (Tensor.set_) holding the product, instead of writing
# the product into c's memory: the tensor object looks written, the caller's buffer is not.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b, c):
        p = a @ b
        c.set_(p)
        return p.sum(dim=1)
