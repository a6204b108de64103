"""Recipe: a small CNN classifier at three batch sizes (CPU-friendly; moves to the GPU as given).

    cudal1 warm cache/recipes/small_cnn.py --device cuda
"""
import torch
import torch.nn as nn

OPTIONS = {}          # backend options for this recipe (the command line's win)
DYNAMIC = None        # the server compiles with torch.compile's default (automatic dynamic)
BATCHES = (1, 8, 32)


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def models():
    torch.manual_seed(0)
    yield "small_cnn", SmallCNN, [(lambda b=b: (torch.randn(b, 3, 32, 32),)) for b in BATCHES]
