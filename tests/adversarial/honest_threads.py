# task: diag_matmul  expect: ok
import concurrent.futures

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Splits the rows over two worker threads and joins them before returning. The threads run
    under the caller's autograd mode (inference mode is per thread)."""

    def forward(self, a, b):
        out = torch.empty_like(b)
        half = a.shape[0] // 2
        inference = torch.is_inference_mode_enabled()

        def part(lo, hi):
            with torch.inference_mode(inference):
                torch.mul(a[lo:hi].unsqueeze(1), b[lo:hi], out=out[lo:hi])

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda r: part(*r), [(0, half), (half, a.shape[0])]))
        return out
