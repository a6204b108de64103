"""Output comparison with tolerances derived from the dtype and the reference's own scale."""
from __future__ import annotations

import torch

# (relative tolerance on the error norm, elementwise atol/rtol) per output dtype.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


def flatten_outputs(out) -> list:
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flatten_outputs(o))
        return res
    return [out]


def compare(ref, new, *, check_stride: bool = False) -> tuple[str, str, dict]:
    """Return (reason, detail, stats); reason "ok" when ``new`` matches ``ref``."""
    refs, news = flatten_outputs(ref), flatten_outputs(new)
    if len(refs) != len(news):
        return "shape", f"{len(news)} outputs, expected {len(refs)}", {}
    worst = 0.0
    for i, (r, n) in enumerate(zip(refs, news)):
        if not isinstance(r, torch.Tensor):
            if r != n:
                return "mismatch", f"output {i}: {n!r} != {r!r}", {}
            continue
        if type(n) is not torch.Tensor:
            return "lazy_output", f"output {i} is a {type(n).__name__}, not an exact torch.Tensor", {}
        if n.shape != r.shape:
            return "shape", f"output {i} has shape {tuple(n.shape)}, expected {tuple(r.shape)}", {}
        if n.dtype != r.dtype:
            return "dtype", f"output {i} has dtype {n.dtype}, expected {r.dtype}", {}
        if check_stride and n.numel() > 1 and n.stride() != r.stride():
            return "stride", f"output {i} has stride {n.stride()}, expected {r.stride()}", {}
        if not (r.is_floating_point() or r.is_complex()):
            if not torch.equal(r.cpu(), n.cpu()):
                return "mismatch", f"output {i}: integer/bool values differ", {}
            continue
        rd, nd = r.detach().double().cpu(), n.detach().double().cpu()
        r_bad, n_bad = ~torch.isfinite(rd), ~torch.isfinite(nd)
        if (n_bad & ~r_bad).any():
            return "nan", f"output {i} has NaN/Inf where the reference is finite", {}
        if not torch.equal(r_bad, n_bad) or not torch.equal(rd[r_bad].nan_to_num(), nd[r_bad].nan_to_num()):
            return "mismatch", f"output {i}: non-finite values differ from the reference", {}
        rf, nf = rd[~r_bad], nd[~r_bad]
        rel_norm, elem = TOLERANCES.get(r.dtype, (1e-4, 1e-4))
        diff = (nf - rf)
        denom = rf.norm().item()
        err = diff.norm().item()
        rel = err / denom if denom > 0 else err
        worst = max(worst, rel)
        # Scale-aware elementwise bound: atol is relative to the reference's RMS, so a constant or
        # zero answer cannot slip under a fixed absolute tolerance.
        rms = (denom / max(rf.numel(), 1) ** 0.5) if rf.numel() else 0.0
        bound = elem * rms + elem * rf.abs()
        exceed = diff.abs() > 10 * bound + 1e-12
        if rel > rel_norm or exceed.any():
            return "mismatch", (f"output {i}: relative error {rel:.3g} > {rel_norm:g}; "
                                f"{int(exceed.sum())} of {rf.numel()} elements out of tolerance"), {"rel_error": rel}
    return "ok", "", {"rel_error": worst}
