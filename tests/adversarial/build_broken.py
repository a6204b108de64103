# task: diag_matmul  expect: build_error
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

# A C++ source with a type error; it does not include torch's headers, so the compiler fails
# within a second (the point is the verdict and its trimmed message, not a real kernel).
with open("cudal1_broken_ext.cpp", "w") as f:
    f.write("int cudal1_broken(int x) {\n    return x + undeclared_name;\n}\n")
_ext = load(name="cudal1_broken_ext", sources=["cudal1_broken_ext.cpp"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
