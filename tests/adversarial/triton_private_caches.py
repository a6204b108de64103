# task: diag_matmul  expect: ok
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_rows(a_ptr, b_ptr, out_ptr, m, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < m
    a = tl.load(a_ptr + row)
    b = tl.load(b_ptr + row * m + cols, mask=mask)
    tl.store(out_ptr + row * m + cols, a * b, mask=mask)


class ModelNew(nn.Module):
    """diag(a) @ b as one Triton kernel, with a torch.compile'd identity after it: code an LLM
    engine writes, compiled into the candidate's own caches."""

    def __init__(self):
        super().__init__()
        self.post = torch.compile(lambda y: y * 1.0)

    def forward(self, a, b):
        b = b.contiguous()
        out = torch.empty_like(b)
        n, m = b.shape
        _scale_rows[(n, triton.cdiv(m, 1024))](a, b, out, m, BLOCK=1024)
        return self.post(out)
