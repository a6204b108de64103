"""Layer and group norms over long rows (``torch.ops.cudal1.long_row_layer_norm``,
``long_row_group_norm``), a Triton template.

Where a row holds hundreds of thousands of elements and there are few rows (a layer norm over a
whole feature map), one program per row leaves most of the GPU idle, so each row is split over
many programs in two passes: partial statistics (count, mean, sum of squared deviations) per
chunk, merged exactly (Chan et al.) in the second pass, which normalises its own chunk. Reads
``x`` twice and writes once; the affine parameters are read once per row, with all rows of a
chunk scheduled together so that they are shared through L2. The chunk count follows the
device's SM count. A group norm is the same over rows of ``C/G * HxW`` elements (one group of
one sample, contiguous in NCHW), with a per-channel affine. Off CUDA (and outside Triton's
interpreter) the ops are ATen's.
"""
from __future__ import annotations

import os

import torch

OP = "cudal1::long_row_layer_norm"
GROUP_OP = "cudal1::long_row_group_norm"
BLOCK = 2048
PROGRAMS_PER_SM = 4


def _triton_enabled(x: torch.Tensor) -> bool:
    return x.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def partial_stats(x_ptr, cnt_ptr, mean_ptr, m2_ptr, N, CHUNK, PARTS, BLOCK: tl.constexpr):
        row, part = tl.program_id(0), tl.program_id(1)
        base = x_ptr + row.to(tl.int64) * N
        start = part * CHUNK
        cnt = tl.zeros([], dtype=tl.float32)
        mean = tl.zeros([], dtype=tl.float32)
        m2 = tl.zeros([], dtype=tl.float32)
        for off in range(0, CHUNK, BLOCK):
            local = off + tl.arange(0, BLOCK)
            idx = start + local
            mask = (local < CHUNK) & (idx < N)
            v = tl.load(base + idx, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(v, axis=0) / tl.maximum(n_b, 1.0)
            d = tl.where(mask, v - mean_b, 0.0)
            m2_b = tl.sum(d * d, axis=0)
            total = cnt + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / tl.maximum(total, 1.0))
            m2 = m2 + m2_b + delta * delta * (cnt * n_b / tl.maximum(total, 1.0))
            cnt = total
        out = row * PARTS + part
        tl.store(cnt_ptr + out, cnt)
        tl.store(mean_ptr + out, mean)
        tl.store(m2_ptr + out, m2)

    @triton.jit
    def normalize(x_ptr, w_ptr, b_ptr, y_ptr, cnt_ptr, mean_ptr, m2_ptr, N, CHUNK, PARTS, eps,
                  GROUPS, CPG, HW, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                  GROUPED: tl.constexpr, PARTS_P2: tl.constexpr, BLOCK: tl.constexpr):
        row, part = tl.program_id(0), tl.program_id(1)
        p = tl.arange(0, PARTS_P2)
        pm = p < PARTS
        cnts = tl.load(cnt_ptr + row * PARTS + p, mask=pm, other=0.0)
        means = tl.load(mean_ptr + row * PARTS + p, mask=pm, other=0.0)
        m2s = tl.load(m2_ptr + row * PARTS + p, mask=pm, other=0.0)
        n = tl.sum(cnts, axis=0)
        mean = tl.sum(means * cnts, axis=0) / n
        dev = tl.where(pm, means - mean, 0.0)
        var = tl.sum(m2s + cnts * dev * dev, axis=0) / n
        rstd = 1.0 / tl.sqrt(var + eps)
        base = row.to(tl.int64) * N
        start = part * CHUNK
        for off in range(0, CHUNK, BLOCK):
            local = off + tl.arange(0, BLOCK)
            idx = start + local
            mask = (local < CHUNK) & (idx < N)
            v = tl.load(x_ptr + base + idx, mask=mask, other=0.0).to(tl.float32)
            y = (v - mean) * rstd
            if GROUPED:   # per-channel affine: row = (sample, group), HW elements per channel
                widx = (row % GROUPS) * CPG + idx // HW
            else:
                widx = idx
            if HAS_W:
                y = y * tl.load(w_ptr + widx, mask=mask, other=0.0).to(tl.float32)
            if HAS_B:
                y = y + tl.load(b_ptr + widx, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + base + idx, y.to(y_ptr.dtype.element_ty), mask=mask)

    return partial_stats, normalize


_KERNELS = None


def _sm_count(x: torch.Tensor) -> int:
    if x.is_cuda:
        return torch.cuda.get_device_properties(x.device).multi_processor_count
    return 8


def plan(rows: int, n: int, sms: int) -> tuple[int, int]:
    """(parts per row, elements per part): about ``PROGRAMS_PER_SM`` programs per SM in all,
    each part a whole number of blocks."""
    want = max(1, -(-PROGRAMS_PER_SM * sms // max(rows, 1)))
    parts = max(1, min(want, -(-n // BLOCK)))
    chunk = -(-n // parts)
    chunk = -(-chunk // BLOCK) * BLOCK
    return -(-n // chunk), chunk


def _run(x, weight, bias, n: int, eps: float, groups: int = 0, hw: int = 1) -> torch.Tensor:
    """Normalise ``x`` over rows of ``n`` elements; ``groups`` > 0: a group norm's rows, the
    affine parameters per channel of ``hw`` elements."""
    global _KERNELS
    import triton
    if _KERNELS is None:
        _KERNELS = _kernels()
    partial_stats, normalize = _KERNELS
    xc = x.contiguous()
    rows = xc.numel() // n
    y = torch.empty_like(xc)
    parts, chunk = plan(rows, n, _sm_count(xc))
    stats = torch.empty((3, rows * parts), device=xc.device, dtype=torch.float32)
    grid = (rows, parts)
    partial_stats[grid](xc, stats[0], stats[1], stats[2], n, chunk, parts, BLOCK=BLOCK,
                        num_warps=8)
    w = weight.contiguous() if weight is not None else xc
    b = bias.contiguous() if bias is not None else xc
    normalize[grid](xc, w, b, y, stats[0], stats[1], stats[2], n, chunk, parts, float(eps),
                    max(groups, 1), n // hw if groups else 0, hw,
                    HAS_W=weight is not None, HAS_B=bias is not None, GROUPED=groups > 0,
                    PARTS_P2=triton.next_power_of_2(parts), BLOCK=BLOCK, num_warps=8)
    return y


@torch.library.custom_op(OP, mutates_args=())
def long_row_layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                        n: int, eps: float) -> torch.Tensor:
    """Layer norm of ``x`` over its trailing ``n`` elements (``weight``/``bias``: ``n`` each)."""
    if not _triton_enabled(x) or x.numel() == 0:
        return torch.nn.functional.layer_norm(x, _trailing_shape(x, n), weight, bias, eps)
    return _run(x, weight, bias, n, eps)


@long_row_layer_norm.register_fake
def _(x, weight, bias, n, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op(GROUP_OP, mutates_args=())
def long_row_group_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                        groups: int, eps: float) -> torch.Tensor:
    """Group norm of ``x`` (N, C, *spatial) in ``groups`` groups (``weight``/``bias``: C each)."""
    if not _triton_enabled(x) or x.numel() == 0:
        return torch.nn.functional.group_norm(x, groups, weight, bias, eps)
    hw = x[0, 0].numel()
    return _run(x, weight, bias, x.shape[1] // groups * hw, eps, groups, hw)


@long_row_group_norm.register_fake
def _(x, weight, bias, groups, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _trailing_shape(x: torch.Tensor, n: int) -> list[int]:
    """The normalized shape: the fewest trailing dims of ``x`` whose product is ``n``."""
    shape, k = [], 1
    for d in reversed(x.shape):
        if k == n and shape:
            break
        shape.insert(0, d)
        k *= d
    return shape
