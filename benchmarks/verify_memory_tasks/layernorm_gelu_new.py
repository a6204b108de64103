import torch


class ModelNew(torch.nn.Module):
    """The same computation without the multiplication by one."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(64)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(x))
