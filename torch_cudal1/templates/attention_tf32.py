"""float32 attention on TF32 tensor cores (``torch.ops.cudal1.attention_tf32``), a Triton template.

PyTorch has no fused attention kernel that runs float32 on tensor cores: flash and cuDNN take
only half precisions, so float32 ``scaled_dot_product_attention`` runs the memory-efficient
kernel on SIMT units (KernelBench L3_31 on an H200: 10.6 ms at best, where CUDA-L1's answer
casts to fp16 for FlashAttention and takes 1.5 ms, with fp16's range). This kernel is the
flash-attention forward pass (an online softmax over blocks of keys, the L x L scores never
stored) with both products at TF32's precision and float32's range: inputs rounded to nearest at
10 mantissa bits like cuBLAS's TF32 matrix products (``engines/builtin/tf32.py``), the second one
in fp16 on values scaled by powers of two, softmax and accumulators in float32. The kernel and
why: ``attention_tf32_kernel.py``.

Where it runs (on the GPU, or under Triton's interpreter, for shapes it takes) it always rounds
its products to TF32, whatever the matmul precision setting: a graph holds it only where the
built-in engine may propose TF32 (option ``tf32``; ``rewrites.TF32_ONLY``), and every such
candidate is verified against the reference run in full float32. Elsewhere the op is ATen's
``scaled_dot_product_attention``. Masks: boolean (True takes part) or additive float32,
broadcasting to the scores.

``torch.ops.cudal1.attention_3xtf32`` is the same kernel with each product split into three
TF32 products (``attention_tf32_kernel.py``): float32's precision (within a few units of its
rounding, as float32 arithmetic in another order), so a graph may hold it at PyTorch's default
``"highest"`` too, where TF32 may not be proposed: the L x L scores are still never stored, and
the products still run on tensor cores, at about a third of the TF32 kernel's rate.
"""
from __future__ import annotations

import math
import os

import torch

OP = "cudal1::attention_tf32"
OP_3XTF32 = "cudal1::attention_3xtf32"
MAX_HEAD_DIM = 128


def _triton_enabled(q: torch.Tensor) -> bool:
    return q.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"


def takes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask=None) -> bool:
    """Shapes the template runs: (B, H, L, E), (B, H, S, E), (B, H, S, Ev) float32, or the same
    without H, with the same leading dims (no broadcast or grouped heads), head dims up to
    ``MAX_HEAD_DIM``, and a mask (boolean, or additive float32) that broadcasts to the scores."""
    if mask is not None:
        scores = (*q.shape[:-1], k.shape[-2])
        try:
            if mask.dtype not in (torch.bool, torch.float32) \
                    or torch.broadcast_shapes(mask.shape, scores) != scores:
                return False
        except RuntimeError:
            return False
    return (q.dtype == k.dtype == v.dtype == torch.float32 and q.dim() in (3, 4)
            and q.dim() == k.dim() == v.dim() and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and k.shape[-2] == v.shape[-2] > 0 and q.shape[-1] == k.shape[-1]
            and 0 < q.shape[-1] <= MAX_HEAD_DIM and 0 < v.shape[-1] <= MAX_HEAD_DIM)


def _kernel():
    # its own module: it imports Triton, which this one (and a CPU-only install) must not need
    from .attention_tf32_kernel import forward
    return forward


_KERNEL = None

# Tiles tried on the device at a shape's first call (triton.autotune): float32 tiles take twice a
# half-precision kernel's shared memory, so the wide ones may not fit wide heads (skipped there).
CONFIGS = [(128, 64, 4, 2), (128, 64, 8, 3), (128, 32, 4, 2), (64, 64, 4, 3), (64, 32, 4, 2),
           (128, 128, 8, 2)]
INTERPRETED = (16, 16)   # under Triton's interpreter (tests): small tiles, quick on a CPU


def _tuned(forward):
    import inspect

    import triton
    # the timings kept in Triton's cache dir (Triton 3.4+): a process serving a cached winner
    # does not tune the same shape again at its first call
    keep = {"cache_results": True} \
        if "cache_results" in inspect.signature(triton.autotune).parameters else {}
    return triton.autotune(
        configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=st)
                 for m, n, w, st in CONFIGS],
        key=["L", "S", "E_P2", "EV_P2", "CAUSAL", "HAS_MASK", "SPLIT"], **keep)(forward)


def _empty(shape, order, like: torch.Tensor) -> torch.Tensor:
    """An empty tensor of ``shape`` with its dims laid out in ``order``, outermost first (the
    layout of the op this one replaces in a graph, whose later views rely on it; contiguous
    where ``order`` does not fit ``shape``)."""
    order = list(order) if sorted(order) == list(range(len(shape))) else list(range(len(shape)))
    return like.new_empty([shape[d] for d in order]).permute([order.index(d)
                                                               for d in range(len(shape))])


def _half_values(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``v`` (B, H, S, EV) in fp16 after dividing each column of each head by a power of two that
    puts its largest magnitude under 2^15 (exact, and within fp16's range), and those divisors
    (B, H, 1, EV) float32. A column of zeros, or one holding an infinity or NaN, is not scaled;
    one of subnormals is scaled up by 2^126 at most (a divisor stays a normal float32)."""
    amax = torch.linalg.vector_norm(v, float("inf"), dim=2, keepdim=True)
    exponent = (torch.frexp(amax).exponent - 15).clamp_(min=-126)   # amax < 2^frexp's exponent
    v_scale = torch.where(amax.isfinite() & (amax > 0), torch.exp2(exponent.to(torch.float32)),
                          1.0)
    return (v / v_scale).to(torch.float16), v_scale


def _run(q, k, v, mask, scale: float, causal: bool, order, split: bool = False) -> torch.Tensor:
    global _KERNEL
    import triton
    if _KERNEL is None:
        forward = _kernel()
        _KERNEL = (forward, _tuned(forward))
    out = _empty((*q.shape[:-1], v.shape[-1]), order, q)
    q4, k4, v4, o4 = (t if t.dim() == 4 else t.unsqueeze(1) for t in (q, k, v, out))
    B, H, L, E = q4.shape
    S, EV = k4.shape[-2], v4.shape[-1]
    if mask is not None:   # broadcast dims stay stride 0: a view, no copy
        if mask.dtype == torch.bool:   # True takes part
            mask = torch.zeros((), dtype=q.dtype, device=q.device).masked_fill(~mask, float("-inf"))
        mask = mask.expand(*q.shape[:-1], S)
        mask = mask if mask.dim() == 4 else mask.unsqueeze(1)
    m4 = mask if mask is not None else q4
    if out.numel():
        e_p2, ev_p2 = (max(16, triton.next_power_of_2(d)) for d in (E, EV))
        if split:   # float32 values as they are (no scale read)
            vk, v_scale, vs_strides = v4, v4, (0, 0, 0)
        else:
            vk, v_scale = _half_values(v4)
            vs_strides = (v_scale.stride(0), v_scale.stride(1), v_scale.stride(3))
        args = (q4, k4, vk, v_scale, m4, o4, float(scale), H, L, S, *q4.stride(), *k4.stride(),
                *vk.stride(), *vs_strides, *m4.stride(), *o4.stride(), E, EV)
        consts = dict(E_P2=e_p2, EV_P2=ev_p2, CAUSAL=causal, HAS_MASK=mask is not None,
                      SPLIT=split)
        plain, tuned = _KERNEL
        if q.is_cuda:
            tuned[lambda meta: (B * H, triton.cdiv(L, meta["BLOCK_M"]))](*args, **consts)
        else:
            bm, bn = INTERPRETED
            plain[(B * H, triton.cdiv(L, bm))](*args, **consts, BLOCK_M=bm, BLOCK_N=bn,
                                                 num_warps=1)
    return out


def _attention(q, k, v, attn_mask, scale, is_causal: bool, order, split: bool) -> torch.Tensor:
    """The template where it runs, else ATen's attention, the output laid out in ``order``."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if not (_triton_enabled(q) and takes(q, k, v, attn_mask)):
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask,
                                                             is_causal=is_causal, scale=scale)
        return _empty(y.shape, order, y).copy_(y)
    return _run(q, k, v, attn_mask, scale, is_causal, order, split=split)


@torch.library.custom_op(OP, mutates_args=())
def attention_tf32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   attn_mask: torch.Tensor | None, scale: float | None, is_causal: bool,
                   order: list[int]) -> torch.Tensor:
    """``scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale)``,
    its products in TF32 where the template runs (see the module's doc), the output laid out with
    its dims in ``order``, outermost first."""
    return _attention(q, k, v, attn_mask, scale, is_causal, order, split=False)


@attention_tf32.register_fake
def _(q, k, v, attn_mask, scale, is_causal, order):
    return _empty((*q.shape[:-1], v.shape[-1]), order, q)


@torch.library.custom_op(OP_3XTF32, mutates_args=())
def attention_3xtf32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     attn_mask: torch.Tensor | None, scale: float | None, is_causal: bool,
                     order: list[int]) -> torch.Tensor:
    """``attention_tf32`` with each product as three TF32 products: float32's precision where
    the template runs (see the module's doc); ATen's attention elsewhere."""
    return _attention(q, k, v, attn_mask, scale, is_causal, order, split=True)


@attention_3xtf32.register_fake
def _(q, k, v, attn_mask, scale, is_causal, order):
    return _empty((*q.shape[:-1], v.shape[-1]), order, q)


def layout_order(t: torch.Tensor) -> list[int]:
    """``t``'s dims ordered outermost first by stride (ties: the logical order), for ``order``."""
    return sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
