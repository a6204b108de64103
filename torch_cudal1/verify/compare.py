"""Output comparison against a high-precision reference, with tolerances from the dtype and the
reference's own scale.

Two references take part: ``hi`` (the reference model run in float64 where it can be) is the
truth, ``native`` (the reference in the task's own dtype) tells how much error an honest
implementation in that dtype makes on this input. A candidate passes when

* its norm-relative error ``|new - hi| / |hi|`` is below ``max(NORM_TOL[dtype], SLACK * native's)``,
* every element is within ``ELEM_TOL[dtype] * (rms(hi) + |hi_i|) + SLACK * max|native - hi|``.

Both bounds scale with the reference's values, so a zero or constant answer cannot slip under an
absolute tolerance; when the reference is exactly constant (``x - x``) the bounds collapse to the
native error, which is then zero too, and an exact short-circuit passes.

fp32 defaults: 1e-3 norm-relative. TF32 matmuls (~3e-4) pass, bf16 arithmetic (~2e-3) does not.

Strides are not compared by default: KernelBench solutions often return contiguous results where
the reference returns a transposed view, and callers of a compiled graph get the strides the
graph's outputs are declared with anyway (``check_stride=True`` turns it on).
"""
from __future__ import annotations

import torch

NORM_TOL = {torch.float64: 1e-9, torch.float32: 1e-3, torch.float16: 5e-3, torch.bfloat16: 2e-2,
            torch.complex64: 1e-3, torch.complex128: 1e-9}
ELEM_TOL = {torch.float64: 1e-6, torch.float32: 1e-2, torch.float16: 3e-2, torch.bfloat16: 6e-2,
            torch.complex64: 1e-2, torch.complex128: 1e-6}
SLACK = 8.0   # how much worse than the eager reference's own rounding an answer may be


def flatten_outputs(out) -> list:
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flatten_outputs(o))
        return res
    if isinstance(out, dict):
        return flatten_outputs([out[k] for k in sorted(out, key=str)])
    return [out]


def check_real_tensor(t, i: int) -> tuple[str, str] | None:
    """An output must be an exact ``torch.Tensor`` with real storage: lazy or subclassed results
    (whose work would run later, when the caller reads them) are rejected."""
    if type(t) is not torch.Tensor:
        return "lazy_output", f"output {i} is a {type(t).__module__}.{type(t).__name__}, not an exact torch.Tensor"
    if t.device.type == "meta" or t.layout != torch.strided or t.is_nested:
        return "lazy_output", f"output {i} has no dense storage ({t.device.type}, {t.layout})"
    if t.numel() > 0:
        try:
            st = t.untyped_storage()
            if st.data_ptr() == 0 or st.nbytes() == 0:
                return "lazy_output", f"output {i} has no storage"
            need = (t.storage_offset() + sum((s - 1) * abs(d) for s, d in zip(t.shape, t.stride())) + 1)
            if need * t.element_size() > st.nbytes():
                return "lazy_output", f"output {i} is larger than its storage"
        except (RuntimeError, NotImplementedError) as e:
            return "lazy_output", f"output {i} has no real storage: {e}"
    return None


def _as_double(t: torch.Tensor, device) -> torch.Tensor:
    t = t.detach().to(device)
    return t.to(torch.complex128) if t.is_complex() else t.double()


def compare(native, new, hi=None, *, check_stride: bool = False,
            norm_tol: float | None = None, elem_tol: float | None = None,
            checker=None) -> tuple[str, str, dict]:
    """Return (reason, detail, stats); reason "ok" when ``new`` matches. ``hi`` defaults to
    ``native`` (no higher-precision reference available). ``checker``: the native helpers
    module (``bench.native``), whose C++ ``check_close`` then computes the error statistics."""
    refs, news = flatten_outputs(native), flatten_outputs(new)
    his = flatten_outputs(hi) if hi is not None else refs
    if len(refs) != len(news) or len(his) != len(refs):
        return "shape", f"{len(news)} outputs, expected {len(refs)}", {}
    worst = 0.0
    for i, (r, n, h) in enumerate(zip(refs, news, his)):
        if not isinstance(r, torch.Tensor):
            if isinstance(n, torch.Tensor) or r != n:
                return "mismatch", f"output {i}: {n!r} != {r!r}", {}
            continue
        bad = check_real_tensor(n, i)
        if bad:
            return bad[0], bad[1], {}
        if n.shape != r.shape:
            return "shape", f"output {i} has shape {tuple(n.shape)}, expected {tuple(r.shape)}", {}
        if n.dtype != r.dtype:
            return "dtype", f"output {i} has dtype {n.dtype}, expected {r.dtype}", {}
        if n.device != r.device:
            return "mismatch", f"output {i} is on {n.device}, expected {r.device}", {}
        if check_stride and n.numel() > 1 and n.stride() != r.stride():
            return "stride", f"output {i} has stride {n.stride()}, expected {r.stride()}", {}
        if not (r.is_floating_point() or r.is_complex()):
            rc, nc = r, n
            wrong = int((rc != nc).sum())
            # Near-ties (argmax after reordered arithmetic) may flip as often as they do between
            # the native and the float64 reference, and no more.
            allowed = 0
            if isinstance(h, torch.Tensor) and h.shape == r.shape and not h.is_floating_point():
                allowed = 2 * int((h.to(rc.device) != rc).sum())
            if wrong > allowed:
                return "mismatch", f"output {i}: {wrong} of {r.numel()} integer/bool values differ", {}
            continue
        hd, rd, nd = (_as_double(x, n.device) for x in (h, r, n))
        if hd.shape != rd.shape:
            hd = rd
        h_bad, n_bad = ~torch.isfinite(hd), ~torch.isfinite(nd)
        r_bad = ~torch.isfinite(rd)
        if (n_bad & ~h_bad & ~r_bad).any():
            return "nan", (f"output {i} has {int((n_bad & ~h_bad).sum())} NaN/Inf values where the "
                           f"reference is finite"), {}
        if not torch.equal(h_bad, n_bad) and not torch.equal(r_bad, n_bad):
            return "mismatch", f"output {i}: non-finite values differ from the reference", {}
        mask = ~(h_bad | r_bad | n_bad)
        hf, rf, nf = hd[mask], rd[mask], nd[mask]
        dtype_norm = norm_tol if norm_tol is not None else NORM_TOL.get(r.dtype, 1e-3)
        dtype_elem = elem_tol if elem_tol is not None else ELEM_TOL.get(r.dtype, 1e-2)
        denom = hf.norm().item()
        native_abs = (rf - hf).abs().max().item() if hf.numel() else 0.0
        native_rel = ((rf - hf).norm().item() / denom) if denom > 0 else 0.0
        if checker is not None and hf.numel() and not hf.is_complex():
            err, denom, max_abs, n_exceed, _ = checker.check_close(hf, nf, dtype_elem,
                                                                   SLACK * native_abs)
        else:
            diff = (nf - hf).abs()
            err = diff.norm().item()
            max_abs = diff.max().item() if diff.numel() else 0.0
            rms = denom / max(hf.numel(), 1) ** 0.5
            n_exceed = int((diff > dtype_elem * (rms + hf.abs()) + SLACK * native_abs).sum())
        rel_tol = max(dtype_norm, SLACK * native_rel)
        if denom > 0:
            rel = err / denom
            rel_bad = rel > rel_tol
        else:   # reference exactly zero: only as much error as the native reference makes
            rel = err
            rel_bad = max_abs > SLACK * native_abs
        worst = max(worst, rel)
        if rel_bad or n_exceed:
            return "mismatch", (f"output {i}: relative error {rel:.3g} (tolerance {rel_tol:.3g}); "
                                f"{int(n_exceed)} of {hf.numel()} elements out of tolerance, "
                                f"max abs error {max_abs:.3g}"), \
                {"rel_error": rel, "tolerance": rel_tol}
    return "ok", "", {"rel_error": worst}
