"""Outputs of a torch.compile'd baseline put back into eager's layout where eager's is contiguous.

Inductor does not always return an output in the layout eager gives it (``keep_output_stride``
notwithstanding): ``cat`` of an empty tensor and a transposed one is eager's fresh contiguous
tensor but inductor's transposed one, which is what a KV cache's first step looks like. The
verifier rejects a non-contiguous output where the reference's is contiguous (a caller's
``view()`` on it would fail), so such a graph lost inductor altogether and served eager. The
compiled baselines (and the built-in families wrapping them) copy those outputs to contiguous
memory inside their own call, where the copy is timed. Eager's layouts are read once, on the
first call, from a fake-tensor run of the reference: no memory, no side effects on the inputs.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.utils._pytree as pytree


def eager_contiguous(fn: Callable, args: tuple) -> Optional[list]:
    """For each leaf of ``fn(*args)``'s result: whether eager returns it as a contiguous tensor
    (False for leaves that are not tensors); None where the fake run cannot tell."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            with torch.no_grad():
                out = fn(*fake)
            leaves = pytree.tree_leaves(out)
            return [isinstance(o, torch.Tensor) and o.numel() > 1 and o.is_contiguous()
                    for o in leaves]
    except Exception:  # noqa: BLE001 - data-dependent ops and the like: no layouts, no copies
        return None


def outputs_to_fix(out, contiguous: Optional[list]) -> tuple:
    """Indices of ``out``'s leaves that eager returns contiguous and these are not."""
    if not contiguous:
        return ()
    leaves = pytree.tree_leaves(out)
    if len(leaves) != len(contiguous):
        return ()
    return tuple(i for i, (o, c) in enumerate(zip(leaves, contiguous))
                 if c and isinstance(o, torch.Tensor) and not o.is_contiguous())


def made_contiguous(out, fix: tuple):
    """``out`` with the leaves at ``fix`` copied to contiguous memory."""
    leaves, spec = pytree.tree_flatten(out)
    for i in fix:
        leaves[i] = leaves[i].contiguous()
    return pytree.tree_unflatten(leaves, spec)


__all__ = ["eager_contiguous", "made_contiguous", "outputs_to_fix"]
