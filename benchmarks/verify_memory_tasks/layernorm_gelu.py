"""LayerNorm + GELU with a 67 MB fp32 output (KernelBench L2_34's epilogue, scaled down): the
verifier's own memory beside a large output, measured by benchmarks/verify_memory.py."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(64)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(x)) * 1.0


def get_inputs():
    return [torch.randn(4, 64, 16, 64, 64)]


def get_init_inputs():
    return []
