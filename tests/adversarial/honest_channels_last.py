# task: conv2d  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The convolution in channels-last, its output copied back to the reference's layout."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.conv.weight.data = self.conv.weight.data.contiguous(memory_format=torch.channels_last)

    def forward(self, x):
        return self.conv(x.contiguous(memory_format=torch.channels_last)).contiguous()
