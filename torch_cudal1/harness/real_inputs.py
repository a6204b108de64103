"""The first call's real inputs, saved for the verifier and loaded with their layout.

A graph's code can depend on its inputs' strides (a ``view`` that only a transposed or sliced
input allows), so each tensor is saved as the memory span its elements cover (from its first
element to its last, gaps and shared elements included) with its shape and strides, and rebuilt
over a copy of that span: the same strides, the same overlaps.
"""
from __future__ import annotations

import json

import torch


def span_numel(x: torch.Tensor) -> int:
    """Elements of memory from ``x``'s first element to its last (0 when it has none)."""
    if x.numel() == 0:
        return 0
    return 1 + sum((size - 1) * step for size, step in zip(x.shape, x.stride()))


def clone_layout(x: torch.Tensor, device=None, dtype=None) -> torch.Tensor:
    """A copy of ``x`` (on ``device``, as ``dtype``) with its shape and strides: ``clone`` and
    ``to`` keep a dense permuted layout but make a gapped or expanded one contiguous."""
    device = x.device if device is None else torch.device(device)
    dtype = x.dtype if dtype is None else dtype
    n = span_numel(x)
    dense = n == x.numel() and torch._debug_has_internal_overlap(x) == 0
    if dense or n == 0 or any(s < 0 for s in x.stride()):
        return x.detach().to(device=device, dtype=dtype, copy=True)
    flat = x.detach().as_strided((n,), (1,)).to(device=device, dtype=dtype, copy=True)
    return flat.as_strided(tuple(x.shape), tuple(x.stride()))


def save(values: list, path: str, limit_bytes: int) -> bool:
    """Write ``values`` (tensors and plain scalars) to ``path``; False when something cannot be
    saved or the spans exceed ``limit_bytes``."""
    from safetensors.torch import save_file
    tensors, layouts, scalars, total = {}, {}, {}, 0
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor):
            v = v.detach()
            n = span_numel(v)
            if n and all(s >= 0 for s in v.stride()):
                tensors[f"i{i}"] = v.as_strided((n,), (1,)).cpu().clone()
                layouts[f"i{i}"] = [list(v.shape), list(v.stride())]
            else:
                tensors[f"i{i}"] = v.cpu().contiguous()
            total += tensors[f"i{i}"].numel() * v.element_size()
        elif isinstance(v, (bool, int, float)):
            scalars[f"i{i}"] = v
        else:
            return False
    if total > limit_bytes:
        return False
    save_file(tensors, path, metadata={"n": str(len(values)), "scalars": json.dumps(scalars),
                                       "layouts": json.dumps(layouts)})
    return True


def load(path: str) -> list:
    from safetensors import safe_open
    with safe_open(path, "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    scalars = json.loads(meta["scalars"])
    layouts = json.loads(meta.get("layouts", "{}"))
    out = []
    for i in range(int(meta["n"])):
        k = f"i{i}"
        if k in layouts:
            shape, stride = layouts[k]
            out.append(tensors[k].as_strided(shape, stride))
        else:
            out.append(tensors[k] if k in tensors else scalars[k])
    return out
