"""Elements far below an output's scale must be computed too (``compare.LOST``): the rms-scaled
bounds let a candidate leave them out (zeros for a cumulative product's tail, a softmax's top
entries only), while float32 determines them to a few ulps. Honest float32 arithmetic in another
order, and the coarser products a precision allows, keep them."""
import pytest
import torch

from torch_cudal1.verify.compare import compare


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
    assert reason == "mismatch" and "half their value" in detail, (name, reason, detail)
    assert stats["rel_error"] < 1e-3   # what the norm-relative bound alone let through


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
