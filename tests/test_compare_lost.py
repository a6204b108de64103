"""Elements far below an output's scale must be computed too (``compare.LOST``): the rms-scaled
bounds let a candidate leave them out (zeros for a cumulative product's tail, a softmax's top
entries only), while the output's dtype determines them to a few roundings: float32, and bf16,
fp16 and float64 alike. Honest arithmetic in another order, the coarser products a precision
allows, and half-precision partial sums keep them."""
import pytest
import torch

from torch_cudal1.verify import compare as rules
from torch_cudal1.verify.compare import DETERMINED, LOST_SHARE, compare, tolerances


def _round_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    """``x`` with its float32 mantissa rounded to ``bits`` bits (TF32: 10, bf16: 7)."""
    i = x.view(torch.int32)
    drop = 23 - bits
    half = 1 << (drop - 1)
    return ((i + half) & ~((1 << drop) - 1)).view(torch.float32)


def _refs(fn, *xs):
    """(native float32 answer, float64 answer)."""
    return fn(*xs), fn(*(x.double() for x in xs))


def _cumprod_prefix(x, k=96):
    out = torch.zeros_like(x)
    out[:, :k] = torch.cumprod(x[:, :k], 1)
    return out


def _softmax_top(x):
    """The probabilities within 1e-6 of each row's largest, zeros for the rest (a kernel that
    skips the exponentials of scores far below the row's maximum)."""
    p = torch.softmax(x, -1)
    return torch.where(p < 1e-6 * p.amax(-1, keepdim=True), torch.zeros_like(p), p)


def _flush_small(y):
    return torch.where(y.abs() < 1e-6 * y.abs().max(), torch.zeros_like(y), y)


g = torch.Generator().manual_seed(0)
X = torch.randn(128, 4000, generator=g)
A, B = torch.randn(256, 1024, generator=g), torch.randn(1024, 192, generator=g)
S = torch.randn(64, 2048, generator=g) * 6


@pytest.mark.parametrize("name,ref,new,xs,precision", [
    ("cumprod, computed in logs", lambda x: torch.cumprod(x, 1),
     lambda x: torch.exp(torch.cumsum(x.abs().log(), 1)) * torch.cumprod(x.sign(), 1),
     (X,), "highest"),
    ("matmul, K summed in another order", lambda a, b: a @ b,
     lambda a, b: sum(a[:, k:k + 128] @ b[k:k + 128] for k in reversed(range(0, 1024, 128))),
     (A, B), "highest"),
    ("matmul, TF32 products at high", lambda a, b: a @ b,
     lambda a, b: _round_mantissa(a, 10) @ _round_mantissa(b, 10), (A, B), "high"),
    ("matmul, bf16 products at medium", lambda a, b: a @ b,
     lambda a, b: _round_mantissa(a, 7) @ _round_mantissa(b, 7), (A, B), "medium"),
    ("softmax as exp(x - logsumexp)", lambda x: torch.softmax(x, -1),
     lambda x: torch.exp(x - torch.logsumexp(x, -1, keepdim=True)), (S,), "highest"),
    ("exp of wide inputs, halved twice", lambda x: torch.exp(x),
     lambda x: torch.exp(x / 2) * torch.exp(x / 2), (S,), "highest"),
])
def test_honest_arithmetic_keeps_every_element(name, ref, new, xs, precision):
    native, hi = _refs(ref, *xs)
    reason, detail, _ = compare(native, new(*xs), hi, precision=precision)
    assert reason == "ok", (name, detail)


@pytest.mark.parametrize("name,ref,cheat,xs", [
    ("cumprod of the first columns only", lambda x: torch.cumprod(x, 1), _cumprod_prefix, (X,)),
    ("softmax's largest entries only", lambda x: torch.softmax(x, -1), _softmax_top, (S,)),
    ("exp with small values flushed", torch.exp, lambda x: _flush_small(torch.exp(x)), (S,)),
])
@pytest.mark.parametrize("precision", ["highest", "high"])
def test_elements_left_out_below_the_scale_are_a_mismatch(name, ref, cheat, xs, precision):
    native, hi = _refs(ref, *xs)
    reason, detail, stats = compare(native, cheat(*xs), hi, precision=precision)
    assert reason == "mismatch", (name, reason, detail)
    assert stats["rel_error"] < 1e-3   # what "high"'s norm-relative bound alone let through
    if stats["rel_error"] <= tolerances(torch.float32, precision)[0]:
        assert "half their value" in detail, (name, detail)
    else:   # "highest"'s bound (1e-5) already refuses the flushed exponential
        assert (name, precision) == ("exp with small values flushed", "highest"), detail


def test_without_a_float64_truth_nothing_is_counted():
    native = torch.cumprod(X, 1)
    assert compare(native, _cumprod_prefix(X), None, precision="highest")[0] == "ok"


def test_subnormals_flushed_to_zero_are_not_counted():
    """Fast-math code flushes subnormal results to zero; float32 barely holds those values, so
    a cumulative product computed that way loses nothing the rule counts."""
    x = X[:, :400]
    native, hi = _refs(lambda t: torch.cumprod(t, 1), x)
    tiny = torch.finfo(torch.float32).tiny
    flushed = torch.where(native.abs() < tiny, torch.zeros_like(native), native)
    assert int(((native != 0) & (native.abs() < tiny)).sum()) > 100   # there are some to flush
    assert compare(native, flushed, hi, precision="highest")[0] == "ok"


# -- every floating dtype --------------------------------------------------------------------
BF16, FP16, F64 = torch.bfloat16, torch.float16, torch.float64
# magnitudes in [0.5, 1): fp16's normal range (down to 6e-5) holds ~30 columns of their products
V = torch.randn(128, 4000, generator=g).sign() * (0.5 + 0.5 * torch.rand(128, 4000, generator=g))


def _refs_as(dtype, fn, *xs):
    """(native answer in ``dtype``, float64 answer) to the inputs rounded to ``dtype``."""
    xs = [x.to(dtype) for x in xs]
    return fn(*xs), fn(*(x.double() for x in xs))


def _cumprod(x):
    return torch.cumprod(x, 1)


def _in_f32(fn):
    """``fn`` computed in float32, rounded to the inputs' dtype once at the end."""
    return lambda *xs: fn(*(x.float() for x in xs)).to(xs[0].dtype)


def _cumprod_logs(x):
    return torch.exp(torch.cumsum(x.abs().log(), 1)) * torch.cumprod(x.sign(), 1)


def _cumprod_steps(x):
    """One product at a time, each rounded to the dtype."""
    out = x.clone()
    for k in range(1, x.shape[1]):
        out[:, k] = out[:, k - 1] * x[:, k]
    return out


def _cumprod_blocked(x, b=64):
    out, carry = torch.empty_like(x), torch.ones_like(x[:, :1])
    for s in range(0, x.shape[1], b):
        out[:, s:s + b] = torch.cumprod(x[:, s:s + b], 1) * carry
        carry = out[:, s + b - 1:s + b]
    return out


def _split_k(parts):
    """Matmul in ``parts`` slices of K, each product rounded to the dtype and summed in it (a
    split-K kernel with a half-precision workspace): near-zero sums lose half their value."""
    def mm(a, b):
        step = a.shape[1] // parts
        ps = [(a[:, k:k + step].float() @ b[k:k + step].float()).to(a.dtype)
              for k in range(0, a.shape[1], step)]
        return sum(ps[1:], ps[0])
    return mm


def _matmul_reversed(a, b):
    return sum(a[:, k:k + 128] @ b[k:k + 128] for k in reversed(range(0, a.shape[1], 128)))


def _softmax_by_hand(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def _softmax_lse(x):
    return torch.exp(x - torch.logsumexp(x, -1, keepdim=True))


def _flush_subnormals(fn):
    def run(x):
        y = fn(x)
        return torch.where(y.abs() < torch.finfo(y.dtype).tiny, torch.zeros_like(y), y)
    return run


def _softmax_top3(x):
    p = torch.softmax(x, -1)
    return torch.where(p < 1e-3 * p.amax(-1, keepdim=True), torch.zeros_like(p), p)


@pytest.mark.parametrize("dtype,name,ref,cheat,xs", [
    (BF16, "cumprod of the first 96 columns", _cumprod, lambda x: _cumprod_prefix(x, 96), (X,)),
    (BF16, "cumprod of the first 24 columns", _cumprod, lambda x: _cumprod_prefix(x, 24), (X,)),
    (BF16, "softmax's largest entries only", lambda x: torch.softmax(x, -1), _softmax_top3, (S,)),
    (FP16, "cumprod of the first 28 columns", _cumprod, lambda x: _cumprod_prefix(x, 28), (V,)),
    (FP16, "softmax's largest entries only", lambda x: torch.softmax(x, -1), _softmax_top3, (S,)),
    (F64, "cumprod of the first 96 columns", _cumprod, lambda x: _cumprod_prefix(x, 96), (X,)),
    (F64, "cumprod of the first 960 columns", _cumprod, lambda x: _cumprod_prefix(x, 960), (X,)),
])
@pytest.mark.parametrize("precision", ["highest", "medium"])
def test_other_dtypes_elements_left_out_are_a_mismatch(dtype, name, ref, cheat, xs, precision):
    native, hi = _refs_as(dtype, ref, *xs)
    reason, detail, stats = compare(native, cheat(*(x.to(dtype) for x in xs)), hi,
                                    precision=precision)
    assert reason == "mismatch" and "half their value" in detail, (name, reason, detail)
    assert str(dtype) in detail
    # what the norm-relative bound alone let through
    assert stats["rel_error"] < {BF16: 2e-2, FP16: 5e-3, F64: 1e-9}[dtype]


@pytest.mark.parametrize("dtype,name,ref,new,xs", [
    (BF16, "cumprod in float32 through logs", _cumprod, _in_f32(_cumprod_logs), (X,)),
    (BF16, "cumprod through logs in bf16", _cumprod, _cumprod_logs, (X,)),
    (BF16, "cumprod one rounded product at a time", _cumprod, _cumprod_steps, (X[:32, :600],)),
    (BF16, "cumprod in blocks", _cumprod, _cumprod_blocked, (X,)),
    (BF16, "cumprod, subnormals flushed", _cumprod, _flush_subnormals(_cumprod), (X,)),
    (BF16, "matmul, K in another order (float32 sums)", lambda a, b: a @ b,
     _in_f32(_matmul_reversed), (A, B)),
    (BF16, "matmul, split-K in 4 with bf16 partial sums", lambda a, b: a @ b, _split_k(4),
     (A, B)),
    (BF16, "matmul, split-K in 16 with bf16 partial sums", lambda a, b: a @ b, _split_k(16),
     (A, B)),
    (BF16, "softmax by hand in bf16", lambda x: torch.softmax(x, -1), _softmax_by_hand, (S,)),
    (FP16, "softmax by hand in fp16", lambda x: torch.softmax(x, -1), _softmax_by_hand, (S,)),
    (FP16, "softmax as exp(x - logsumexp) in fp16", lambda x: torch.softmax(x, -1),
     _softmax_lse, (S,)),
    (FP16, "softmax in float32", lambda x: torch.softmax(x, -1),
     _in_f32(lambda x: torch.softmax(x, -1)), (S,)),
    (FP16, "cumprod through logs in float32", _cumprod, _in_f32(_cumprod_logs), (V,)),
    (FP16, "cumprod in blocks", _cumprod, _cumprod_blocked, (V,)),
    (FP16, "cumprod, subnormals flushed", _cumprod, _flush_subnormals(_cumprod), (V,)),
    (FP16, "matmul, split-K in 8 with fp16 partial sums", lambda a, b: a @ b, _split_k(8),
     (A, B)),
    (F64, "cumprod through logs", _cumprod, _cumprod_logs, (X,)),
    (F64, "cumprod in blocks", _cumprod, _cumprod_blocked, (X,)),
    (F64, "cumprod, subnormals flushed", _cumprod, _flush_subnormals(_cumprod), (X,)),
    (F64, "matmul, K summed in another order", lambda a, b: a @ b, _matmul_reversed, (A, B)),
    (F64, "softmax as exp(x - logsumexp)", lambda x: torch.softmax(x, -1), _softmax_lse, (S,)),
    (F64, "exp of wide inputs, halved twice", torch.exp,
     lambda x: torch.exp(x / 2) * torch.exp(x / 2), (S,)),
])
def test_other_dtypes_honest_arithmetic_is_accepted(dtype, name, ref, new, xs):
    native, hi = _refs_as(dtype, ref, *xs)
    got = new(*(x.to(dtype) for x in xs))
    for precision in ("highest", "high", "medium"):
        reason, detail, _ = compare(native, got, hi, precision=precision)
        assert reason == "ok", (name, precision, detail)


def test_half_precision_partial_sums_lose_elements_within_their_noise():
    """bf16 partial sums lose near-zero sums (more than LOST_SHARE of them) that a float32-inside
    native can't mark as undetermined: the share allowed follows the candidate's own error."""
    native, hi = _refs_as(BF16, lambda a, b: a @ b, A, B)
    reason, _, stats = compare(native, _split_k(16)(A.bfloat16(), B.bfloat16()), hi)
    assert reason == "ok" and stats["lost"] > 10 * LOST_SHARE * native.numel()


def test_determined_tolerance_per_dtype():
    determined_tol, cap = rules.determined_tol, rules.DETERMINED_CAP
    # float32 as before: DETERMINED over the precision's coarser products
    assert determined_tol(torch.float32, "highest") == DETERMINED
    assert determined_tol(torch.float32, "high") == DETERMINED / 2 ** 13
    assert determined_tol(torch.float32, "medium") == DETERMINED / 2 ** 16
    # bf16 and fp16 capped well below LOST, whatever the precision (it is float32's)
    for dt in (BF16, FP16):
        assert determined_tol(dt, "highest") == determined_tol(dt, "medium") == cap
    assert determined_tol(F64, "high") == pytest.approx(DETERMINED * 2.0 ** -29)
    assert determined_tol(torch.complex64) is None and determined_tol(torch.int32) is None
