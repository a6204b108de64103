"""Whether the reference's float64 copy can be trusted as the higher-precision answer.

``model.double()`` is not always the same computation in more precision: a graph traced on a
GPU may call a kernel ATen picked for its dtype (a fused attention kernel, most likely), which fed
float64 need not give a sound answer (a transformers BERT layer traced in bf16 on a GPU had a
float64 copy that answered one input with a relative error of 0.68 against itself from one call
to the next). The compare's tolerance grows with the native reference's own error against the
float64 copy (``SLACK * native's``), so a copy like that would loosen every check. The decision is
made once, in the judge, on draw 0, before any candidate runs: a copy much further from the
native answer than the dtype's tolerance is dropped, and the native reference is the answer, at
the dtype's own tolerance, as for an op without float64.
"""
from __future__ import annotations

import torch

from .compare import NORM_TOL, flatten_outputs

TRUST = 10.0   # a native reference this many of its dtype's tolerances from float64: not float64's fault alone


def distrust(native, hi) -> str:
    """'' where the float64 answer ``hi`` agrees with the native one within ``TRUST`` times the
    native dtype's norm tolerance, else why not (the first output that does not)."""
    if native is None or hi is None:
        return ""
    for i, (n, h) in enumerate(zip(flatten_outputs(native), flatten_outputs(hi))):
        if not (isinstance(n, torch.Tensor) and isinstance(h, torch.Tensor)) \
                or not n.is_floating_point() or n.shape != h.shape or not n.numel():
            continue
        nd, hd = n.detach().double(), h.detach().to(n.device).double()
        if bool((torch.isfinite(nd) & ~torch.isfinite(hd)).any()):
            return f"output {i}: non-finite where the native reference is finite"
        ok = torch.isfinite(nd) & torch.isfinite(hd)
        denom = float(hd[ok].norm())
        if denom == 0:
            continue
        rel = float((nd[ok] - hd[ok]).norm()) / denom
        bound = TRUST * NORM_TOL.get(n.dtype, 1e-3)
        # A float64 answer far smaller than the native one is cancellation the native dtype
        # leaves as rounding noise (a mean of normalised values, x - x): float64 is right there.
        if rel > bound and denom >= 0.1 * float(nd[ok].norm()):
            return f"output {i}: {rel:.3g} from the native reference (over {bound:.3g})"
    return ""
