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

Float32's bounds follow the precision the user asked for (``torch.get_float32_matmul_precision()``,
``precision=``): at ``"highest"`` (PyTorch's default) 1e-5 norm-relative and 1e-4 per element,
which float32 arithmetic in any order meets (~1e-6; fast-math intrinsics too) and operands
rounded to TF32, fp16 or bf16 (~3e-4 and more) do not, nor do such operands on a part of the
work (one K-block in sixteen in TF32: ~7e-5), mantissas cut to 12 bits (~7e-5) or exponentials
approximated to 1e-4; at ``"high"`` 1e-3, which TF32 products meet and bf16 arithmetic (~2e-3)
does not; at ``"medium"`` 1e-2 (bf16 products). Without a precision (``None``), the ``"high"``
bounds. Where float32 itself is further off (a reduction over long rows, a mean far from zero),
SLACK times the native reference's own error is the bound.

Strides are not compared by default: KernelBench solutions often return contiguous results where
the reference returns a transposed view, which any caller can use as it used the reference's
(``check_stride=True`` requires the reference's strides). The other way round is a false speedup
(``check_layout``, the verifier's): where the reference returns a contiguous tensor, a candidate
that returns another layout of the same values (channels-last straight from cuDNN, a transposed
product) skips the copy back and hands its cost to the caller, whose ``view`` on the result then
fails, and torch.compile keeps eager's output strides for just that reason.
"""
from __future__ import annotations

import math

import torch

NORM_TOL = {torch.float64: 1e-9, torch.float32: 1e-3, torch.float16: 5e-3, torch.bfloat16: 2e-2,
            torch.complex64: 1e-3, torch.complex128: 1e-9}
ELEM_TOL = {torch.float64: 1e-6, torch.float32: 1e-2, torch.float16: 3e-2, torch.bfloat16: 6e-2,
            torch.complex64: 1e-2, torch.complex128: 1e-6}
# float32 (and complex64) bounds per float32_matmul_precision: (norm-relative, per element)
FP32_TOL = {"highest": (1e-5, 1e-4), "high": (1e-3, 1e-2), "medium": (1e-2, 5e-2)}
SLACK = 8.0   # how much worse than the eager reference's own rounding an answer may be
# Elements an output's dtype determines (``determined_tol``): in its normal range, where the native
# reference's relative error against float64 is within DETERMINED, scaled from float32's rounding
# to the dtype's and to that of the products the precision allows (TF32's 2^13 times coarser at
# "high", bf16's 2^16 at "medium"). An answer off by more than LOST of the value on more than
# LOST_SHARE of them (and LOST_MIN at least) did not compute them: values far below the output's
# scale (a cumulative product's tail, a softmax's small probabilities) fit under the rms-scaled
# bounds above however wrong they are.
DETERMINED = 1e-4
LOST, LOST_SHARE, LOST_MIN = 0.5, 1e-4, 4
# Scaled alike, bf16 and fp16 would count elements their native got 6.6 and 0.8 off: capped at
# two of bf16's roundings (2^-8), still 128 times below LOST.
DETERMINED_CAP = LOST / 128
# bf16 and fp16 natives mostly compute in float32 and round only their answer, so their error
# cannot tell a product's tail from a sum cancelling to near zero, which a kernel with
# half-precision partial sums misses by half on a share of elements near its own norm-relative
# error (0.7-0.8x it on Gaussian sums, more where values crowd near zero): for them the share
# lost may reach SWAMP times that error. A tail left out loses far more (bf16 cumprod on 96 of
# 2000 columns: 29% of the elements bf16 determines, at an error of 1.5e-3).
SWAMP = 4.0
_COARSER = {"highest": 1.0, "high": 2.0 ** 13, "medium": 2.0 ** 16}
_UNIT32 = torch.finfo(torch.float32).eps / 2
PIECE = 1 << 24   # elements compared at a time (128 MB in float64)


def tolerances(dtype: torch.dtype, precision: str | None = None) -> tuple[float, float]:
    """(norm-relative, per-element) bounds for outputs of ``dtype`` at ``precision``."""
    if precision in FP32_TOL and dtype in (torch.float32, torch.complex64):
        return FP32_TOL[precision]
    return NORM_TOL.get(dtype, 1e-3), ELEM_TOL.get(dtype, 1e-2)


def determined_tol(dtype: torch.dtype, precision: str | None = None) -> float | None:
    """The native reference's largest relative error against float64 at which an element of a
    ``dtype`` output counts as determined (``LOST``); None where no elements are counted."""
    if not dtype.is_floating_point:   # complex outputs: the bounds above only
        return None
    coarser = 1.0
    if dtype == torch.float32:   # the precision allows coarser products for float32 only
        coarser = _COARSER.get(precision or "high")
        if coarser is None:
            return None
    # Float64 (1.9e-13): the native reference is the float64 run itself (no wider truth), so
    # every normal element counts but where the two runs differ (nondeterministic reductions):
    # float64 in another order moves an element by half only where its terms cancel to ~1e-16
    # of themselves, which random inputs practically never do.
    unit = torch.finfo(dtype).eps / 2
    return min(DETERMINED * unit / _UNIT32, DETERMINED_CAP) / coarser


def values_match(ref, got, hi=None, tol: float | None = None) -> bool:
    """A Python value output: exactly equal, but for floats (a tensor's ``.item()``), which may
    differ by ``tol`` of their size (the bound of the task's floating tensors; float32's at
    "highest" where it has none), or by SLACK times the native reference's own error against its
    float64 run (``hi``)."""
    if type(ref) is not float or type(got) not in (float, int):
        return type(got) is type(ref) and got == ref
    if math.isnan(ref) or math.isinf(ref):
        return got == ref or (math.isnan(ref) and math.isnan(got))
    allowed = (FP32_TOL["highest"][0] if tol is None else tol) * abs(ref)
    if type(hi) is float and math.isfinite(hi):
        allowed = max(allowed, SLACK * abs(ref - hi))
    return abs(float(got) - ref) <= allowed


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


def pieces(*ts: torch.Tensor, size: int | None = None):
    """The tensors (one shape) in aligned flat pieces of at most about ``size`` elements, in
    logical order: the comparison's float64 copies and masks then take a few times a piece, not
    a few times the output (an 8.6 GB output would otherwise need over 100 GB beside it)."""
    size = size or PIECE
    numel = ts[0].numel()
    if numel <= size or ts[0].dim() == 0:
        yield tuple(t.reshape(-1) for t in ts)
    elif all(t.is_contiguous() for t in ts):
        flats = [t.view(-1) for t in ts]
        for s in range(0, numel, size):
            yield tuple(f[s:s + size] for f in flats)
    else:   # views (transposed outputs): slices of the first dimension, each copied when flattened
        lead = max(1, ts[0].shape[0])
        rows = max(1, size // max(1, numel // lead))
        for s in range(0, ts[0].shape[0], rows):
            yield tuple(t[s:s + rows].reshape(-1) for t in ts)


def _finite_pattern(r, n, h, i: int) -> str:
    """'nan:...' where the new output has NaN/Inf where the references are finite, 'mismatch:...'
    where its non-finite values are elsewhere than either reference's, else ''."""
    new_bad, like_h, like_r = 0, True, True
    for rp, np_, hp in pieces(r, n, h):
        n_bad = ~torch.isfinite(np_)
        h_bad = ~torch.isfinite(hp.to(np_.device))
        r_bad = ~torch.isfinite(rp)
        new_bad += int((n_bad & ~h_bad & ~r_bad).sum())
        if not bool(n_bad.any() | h_bad.any() | r_bad.any()):
            continue
        # where they are, and which: +inf, -inf and NaN are three different answers
        n_kind = _nonfinite_kind(np_)
        like_h = like_h and torch.equal(_nonfinite_kind(hp.to(np_.device)), n_kind)
        like_r = like_r and torch.equal(_nonfinite_kind(rp), n_kind)
    if new_bad:
        return f"nan:output {i} has {new_bad} NaN/Inf values where the reference is finite"
    if not like_h and not like_r:
        return (f"mismatch:output {i}: non-finite values (NaN, +inf, -inf) differ from the "
                "reference's")
    return ""


def _integer_mismatch(r: torch.Tensor, n: torch.Tensor, h) -> str:
    """'' where integer/bool output ``n`` matches the native reference ``r``. Near-ties (an
    argmax, a rounding after reordered float arithmetic) may flip as often as they do between
    the native and the float64 reference, and no more; and a value further from float64's than
    twice the native's largest distance from it (and more than one unit from the native's) is a
    near-tie only a few times (at most 1e-3 of the values): a part of the output left
    uncomputed is not."""
    wrong_mask = r != n
    wrong = int(wrong_mask.sum())
    if not wrong:
        return ""
    flips = 0
    hd = None
    if isinstance(h, torch.Tensor) and h.shape == r.shape and not h.is_floating_point():
        hd = h.to(r.device)
        flips = int((hd != r).sum())
    if wrong > 2 * flips:
        return f"{wrong} of {r.numel()} integer/bool values differ"
    if r.dtype == torch.bool:
        return ""
    near = (n.long() - r.long()).abs() <= 1
    if hd is not None:
        # as far from float64's as twice the native's largest distance from it
        spread = int((hd.long() - r.long()).abs().max())
        near = near | ((n.long() - hd.long()).abs() <= max(1, 2 * spread))
    far = int((wrong_mask & ~near).sum())
    if far > max(2, r.numel() // 1000):
        return (f"{far} of {r.numel()} integer values are further from the float64 reference "
                "than twice the native's distance from it")
    return ""


def _nonfinite_kind(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 +inf, 2 -inf, 3 NaN (complex: 1 for any non-finite part)."""
    if t.is_complex():
        return (~torch.isfinite(t)).to(torch.uint8)
    kind = torch.zeros(t.shape, dtype=torch.uint8, device=t.device)
    kind[torch.isposinf(t)] = 1
    kind[torch.isneginf(t)] = 2
    kind[torch.isnan(t)] = 3
    return kind


def _finite_parts(r, n, h):
    """Each piece's float64 (reference, native, new) values where all three are finite."""
    for rp, np_, hp in pieces(r, n, h):
        hd, rd, nd = (_as_double(x, np_.device) for x in (hp, rp, np_))
        mask = torch.isfinite(hd) & torch.isfinite(rd) & torch.isfinite(nd)
        if bool(mask.all()):
            yield hd, rd, nd
        else:
            yield hd[mask], rd[mask], nd[mask]


def _float_stats(r, n, h, elem_tol: float, checker, determined: float | None = None):
    """(err norm, reference norm, max abs error, elements out of tolerance, native's max abs
    error, native's norm-relative error, elements compared, elements determined, elements lost),
    accumulated piece by piece: the element bound needs the reference's rms over the whole output,
    hence two passes. Elements determined and lost (``LOST``) are counted where ``determined``
    (``determined_tol``) is given."""
    ref_sq = nat_sq = err_sq = 0.0
    native_abs = max_abs = 0.0
    count = 0
    # one piece (most outputs): its float64 copies serve both passes instead of being made twice
    whole = list(_finite_parts(r, n, h)) if r.numel() <= PIECE else None
    for hf, rf, nf in whole or _finite_parts(r, n, h):
        if not hf.numel():
            continue
        count += hf.numel()
        ref_sq += float(hf.abs().square().sum())
        nat = (rf - hf).abs()
        nat_sq += float(nat.square().sum())
        native_abs = max(native_abs, float(nat.max()))
        del nat
    denom = ref_sq ** 0.5
    native_rel = (nat_sq ** 0.5 / denom) if denom > 0 else 0.0
    rms = denom / max(count, 1) ** 0.5
    slack = SLACK * native_abs
    n_exceed, ref_sq, n_sure, lost = 0, 0.0, 0, 0
    tiny = torch.finfo(r.dtype).tiny if determined is not None else 0.0
    for hf, rf, nf in whole or _finite_parts(r, n, h):
        if not hf.numel():
            continue
        if determined is not None:
            mag = hf.abs()
            # (the dtype's normal range only: flushing subnormals to zero, as fast-math code
            # does, loses values the dtype itself barely holds)
            sure = ((rf - hf).abs() <= determined * mag) & (mag >= tiny)
            n_sure += int(sure.sum())
            lost += int((sure & ((nf - hf).abs() > LOST * mag)).sum())
            del mag, sure
        if checker is not None and not hf.is_complex():
            # The C++ checker's bound uses the rms of what it is given: shifted to the whole
            # output's rms through the absolute slack (no shift when there is one piece).
            own_rms = float(hf.norm()) / hf.numel() ** 0.5
            e, refn, m, x, _ = checker.check_close(hf, nf, elem_tol,
                                                    slack + elem_tol * (rms - own_rms))
            err_sq, ref_sq = err_sq + e * e, ref_sq + refn * refn
            max_abs, n_exceed = max(max_abs, m), n_exceed + int(x)
        else:
            diff = (nf - hf).abs()
            err_sq += float(diff.square().sum())
            max_abs = max(max_abs, float(diff.max()))
            n_exceed += int((diff > elem_tol * (rms + hf.abs()) + slack).sum())
    if checker is not None and count and not r.is_complex():
        denom = ref_sq ** 0.5   # the native checker's figure, computed outside Python's reach
    return err_sq ** 0.5, denom, max_abs, n_exceed, native_abs, native_rel, count, n_sure, lost


def compare(native, new, hi=None, *, check_stride: bool = False, check_layout: bool = False,
            norm_tol: float | None = None, elem_tol: float | None = None,
            checker=None, precision: str | None = None,
            value_tol: float | None = None, tails: bool = True,
            native_err_floor: list[float] | None = None) -> tuple[str, str, dict]:
    """Return (reason, detail, stats); reason "ok" when ``new`` matches. ``hi`` defaults to
    ``native`` (no higher-precision reference available). ``checker``: the native helpers
    module (``bench.native``), whose C++ ``check_close`` then computes the error statistics.
    ``check_layout``: an output the reference returns contiguous must be contiguous too.
    ``tails=False``: the norm and element bounds only, not the elements far below the output's
    scale (``LOST``), which inputs far wider than usual put where no caller reads them (a
    sigmoid's e^-40). ``native_err_floor``: per output, the native reference's error (the norm
    of its difference from float64) on other draws of the task, where this draw's alone would
    set too tight a bound (``Judge.cmp``); an error within SLACK times it passes the norm bound.
    A mismatch on the norm bound alone says so (``norm_only`` in its stats)."""
    refs, news = flatten_outputs(native), flatten_outputs(new)
    his = flatten_outputs(hi) if hi is not None else refs
    if len(refs) != len(news) or len(his) != len(refs):
        return "shape", f"{len(news)} outputs, expected {len(refs)}", {}
    worst, most_lost = 0.0, 0
    for i, (r, n, h) in enumerate(zip(refs, news, his)):
        if not isinstance(r, torch.Tensor):
            tol = value_tol
            if tol is None:   # the tightest bound of the answer's own floating tensors
                tol = min((tolerances(t.dtype, precision)[0] for t in refs
                           if isinstance(t, torch.Tensor) and t.is_floating_point()),
                          default=None)
            if isinstance(n, torch.Tensor) or not values_match(r, n, h, tol):
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
        if check_layout and n.numel() > 1 and r.is_contiguous() and not n.is_contiguous():
            return "stride", (f"output {i} is not contiguous (stride {n.stride()}, the reference's "
                              f"{r.stride()}): a caller's view() on it fails, and the copy to the "
                              "reference's layout is left out of the timing"), {}
        if not (r.is_floating_point() or r.is_complex()):
            bad = _integer_mismatch(r, n, h)
            if bad:
                return "mismatch", f"output {i}: {bad}", {}
            continue
        if not isinstance(h, torch.Tensor) or h.shape != r.shape:
            h = r
        # which elements the dtype determines needs a float64 truth beside the native answer
        sure = determined_tol(r.dtype, precision) if (
            tails and h is not r and h.dtype == torch.float64) else None
        base_norm, base_elem = tolerances(r.dtype, precision)
        dtype_norm = norm_tol if norm_tol is not None else base_norm
        dtype_elem = elem_tol if elem_tol is not None else base_elem
        bad = _finite_pattern(r, n, h, i)
        if bad:
            return "nan" if bad.startswith("nan:") else "mismatch", bad.split(":", 1)[1], {}
        err, denom, max_abs, n_exceed, native_abs, native_rel, count, n_sure, lost = _float_stats(
            r, n, h, dtype_elem, checker, sure)
        rel_tol = max(dtype_norm, SLACK * native_rel)
        floor = native_err_floor[i] if native_err_floor and i < len(native_err_floor) else 0.0
        if denom > 0:
            rel = err / denom
            rel_bad = rel > rel_tol and not err <= SLACK * floor
        else:   # reference exactly zero: only as much error as the native reference makes
            rel = err
            rel_bad = max_abs > SLACK * native_abs
        worst = max(worst, rel)
        if rel_bad or n_exceed:
            return "mismatch", (f"output {i}: relative error {rel:.3g} (tolerance {rel_tol:.3g}); "
                                f"{int(n_exceed)} of {count} elements out of tolerance, "
                                f"max abs error {max_abs:.3g}"), \
                {"rel_error": rel, "tolerance": rel_tol, "norm_only": not n_exceed}
        most_lost = max(most_lost, lost)
        share = LOST_SHARE
        if r.is_floating_point() and torch.finfo(r.dtype).bits < 32:
            share = max(share, SWAMP * rel)
        if lost > max(LOST_MIN, share * n_sure):
            return "mismatch", (f"output {i}: {lost} of the {n_sure} elements {r.dtype} determines "
                                f"(of {count}) are off by more than half their value (relative "
                                f"error {rel:.3g}: values far below the output's scale left out "
                                "or wrong)"), {"rel_error": rel, "tolerance": rel_tol,
                                               "lost": lost, "determined": n_sure}
    return "ok", "", {"rel_error": worst, "lost": most_lost}


def within_range(native, new, hi) -> tuple[list, list, list]:
    """The three answers flattened, with the elements whose float64 truth is past half of the
    output dtype's largest value (or past float64's own) set to zero in all three: there inf and
    a huge finite value are both as right as the dtype can be, and which one an honest order of
    arithmetic lands on near the edge is chance (a cumulative product through logarithms)."""
    nat, got, his = flatten_outputs(native), flatten_outputs(new), flatten_outputs(hi)
    if not (len(nat) == len(got) == len(his)):
        return nat, got, his
    for i, (n, g, h) in enumerate(zip(nat, got, his)):
        if not all(isinstance(t, torch.Tensor) for t in (n, g, h)) or not n.is_floating_point() \
                or not h.is_floating_point() or not (n.shape == g.shape == h.shape):
            continue
        edge = (h.abs() >= torch.finfo(n.dtype).max / 2).to(n.device)
        if bool(edge.any()):
            nat[i] = n.masked_fill(edge, 0)
            his[i] = h.masked_fill(edge.to(h.device), 0)
            if g.dtype == n.dtype:
                got[i] = g.masked_fill(edge.to(g.device), 0)
    return nat, got, his


def reference_holds(native, hi, precision: str | None = None) -> tuple[str, str, dict]:
    """``compare`` of the native reference's answers with the float64 ones rounded to the native
    dtypes (the best an answer in those dtypes can be), by the norm and element bounds: "ok"
    where the reference in its own dtype is right on this input, as on inputs of the usual range
    it is, so that an answer off there cannot blame the dtype."""
    nat, _, his = within_range(native, native, hi)
    return compare(in_dtypes_of(nat, his), nat, his, precision=precision, tails=False)


def in_dtypes_of(like: list, values: list) -> list:
    """``values`` rounded to the dtypes of ``like``, output by output (flat lists); an output
    whose value is not a tensor of the same shape stays as ``like`` has it."""
    return [v.to(n.dtype) if isinstance(v, torch.Tensor) and isinstance(n, torch.Tensor)
            and v.shape == n.shape else n for n, v in zip(like, values)]
