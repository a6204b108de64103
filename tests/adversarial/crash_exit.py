# task: diag_matmul  expect: crash
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        getattr(os, "_ex" + "it")(3)
