"""The Triton kernel of ``attention_tf32`` (imported only where it runs: it needs Triton).

Both products take inputs with TF32's precision, 10 mantissa bits rounded to nearest:

- Scores: q and k rounded to TF32 here before ``tl.dot``. A tensor core fed float32 registers
  ignores their 13 low mantissa bits (truncation, biased toward zero): so truncated, the kernel
  was 1.7e-3 from float64 on a 16384-key sequence on an H200, three times fp16 FlashAttention's
  error (``benchmarks/attention_bench.py``).
- Weights times values: in fp16, which has the same 10 bits, twice TF32's tensor-core rate and
  half its bytes per value in shared memory. The weights lie in [0, 1]; the values come in
  scaled per column of each head by a power of two (``attention_tf32._half_values``), their
  largest under 2^15, and the output is scaled back: float32's range kept, only values under
  2^-29 of their column's largest lose bits.

With ``SPLIT`` (``attention_3xtf32``) each product keeps float32's precision on the same tensor
cores: every operand is split into a TF32 head and the TF32 rounding of what the head leaves
(``x - head`` is exact), and ``a @ b`` is taken as ``lo(a) @ hi(b) + hi(a) @ lo(b) + hi(a) @
hi(b)``, small terms first: three TF32 products whose terms are exact in the float32
accumulator, the dropped ``lo @ lo`` under 2^-22 of each term; the values are not scaled to fp16.
"""
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)   # exp(x) = exp2(x * log2(e))


@triton.jit
def round_tf32(x):
    """``x`` (float32) rounded to TF32's 10 mantissa bits, ties away from zero (as PTX's
    ``cvt.rna.tf32.f32``), in integer ops that Triton's interpreter runs too; infinities stay."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)


@triton.jit
def split_tf32(x):
    """``x`` (float32) as a TF32 head and the TF32 rounding of the rest: ``hi + lo`` is ``x``
    within 2^-22 of it."""
    hi = round_tf32(x)
    return hi, round_tf32(x - hi)


@triton.jit
def dot_3xtf32(a_hi, a_lo, b):
    """``a @ b`` at float32's precision in three TF32 products (``a`` already split)."""
    b_hi, b_lo = split_tf32(b)
    out = tl.dot(a_lo, b_hi, input_precision="tf32")
    out = tl.dot(a_hi, b_lo, out, input_precision="tf32")
    return tl.dot(a_hi, b_hi, out, input_precision="tf32")


@triton.jit
def _keys(q, q_lo, m_i, l_i, acc, start, rows, e, ev, k_ptr, v_ptr, m_ptr, L, S, E, EV,
          sks, ske, svs, sve, sml, sms, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
          EDGE: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr):
    """One block of keys into the online softmax. ``EDGE``: the block may pass the last key or
    the causal diagonal, so each score is checked; blocks inside both (most of them) skip that."""
    cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
    k_in, v_in, m_in = e[:, None] < E, ev[None, :] < EV, rows[:, None] < L
    if EDGE:
        k_in, v_in, m_in = (k_in & (cols[None, :] < S), v_in & (cols[:, None] < S),
                            m_in & (cols[None, :] < S))
    k_t = tl.load(k_ptr + cols[None, :] * sks + e[:, None] * ske, mask=k_in, other=0.0)
    if SPLIT:
        s = dot_3xtf32(q, q_lo, k_t)
    else:
        s = tl.dot(q, round_tf32(k_t), input_precision="tf32")
    if HAS_MASK:   # additive, in natural-log units like the scores before the exp2 scale
        s += tl.load(m_ptr + rows[:, None] * sml + cols[None, :] * sms,
                     mask=m_in, other=0.0) * LOG2E
    if EDGE:
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # a row with no key yet
    p = tl.math.exp2(s - m_safe[:, None])
    alpha = tl.math.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = tl.load(v_ptr + cols[:, None] * svs + ev[None, :] * sve, mask=v_in, other=0.0)
    if SPLIT:
        p_hi, p_lo = split_tf32(p)
        acc = acc * alpha[:, None] + dot_3xtf32(p_hi, p_lo, v)
    else:
        # the weights (in [0, 1]) and the scaled values in fp16: 10 mantissa bits, rounded to nearest
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
    return m_new, l_i, acc


@triton.jit
def forward(q_ptr, k_ptr, v_ptr, vs_ptr, m_ptr, o_ptr, scale, H, L, S,
            sqb, sqh, sql, sqe, skb, skh, sks, ske, svb, svh, svs, sve, svsb, svsh, svse,
            smb, smh, sml, sms, sob, soh, sol, soe,
            E, EV, E_P2: tl.constexpr, EV_P2: tl.constexpr, CAUSAL: tl.constexpr,
            HAS_MASK: tl.constexpr, SPLIT: tl.constexpr, BLOCK_M: tl.constexpr,
            BLOCK_N: tl.constexpr):
    bh, pid_m = tl.program_id(0), tl.program_id(1)   # batch x heads can pass 65535
    b, h = (bh // H).to(tl.int64), (bh % H).to(tl.int64)
    q_ptr += b * sqb + h * sqh
    k_ptr += b * skb + h * skh
    v_ptr += b * svb + h * svh
    m_ptr += b * smb + h * smh
    o_ptr += b * sob + h * soh
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    e = tl.arange(0, E_P2)
    ev = tl.arange(0, EV_P2)
    q = tl.load(q_ptr + rows[:, None] * sql + e[None, :] * sqe,
                mask=(rows[:, None] < L) & (e[None, :] < E), other=0.0)
    # the scale (in exp2's units) folded into q once, not into each block of scores
    if SPLIT:
        q, q_lo = split_tf32(q * (scale * LOG2E))
    else:
        q = round_tf32(q * (scale * LOG2E))
        q_lo = q   # unused
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, EV_P2], tl.float32)
    end = S
    inner = S // BLOCK_N * BLOCK_N   # blocks of keys before it hold no key past the last
    if CAUSAL:   # top-left aligned, as SDPA's is_causal: query i sees keys j <= i
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M)
        # and those before this one end at or before the block's first query
        inner = tl.minimum(inner, pid_m * BLOCK_M // BLOCK_N * BLOCK_N)
    for start in range(0, inner, BLOCK_N):
        m_i, l_i, acc = _keys(q, q_lo, m_i, l_i, acc, start, rows, e, ev, k_ptr, v_ptr, m_ptr, L,
                              S, E, EV, sks, ske, svs, sve, sml, sms, CAUSAL, HAS_MASK, False,
                              BLOCK_N, SPLIT)
    for start in range(inner, end, BLOCK_N):
        m_i, l_i, acc = _keys(q, q_lo, m_i, l_i, acc, start, rows, e, ev, k_ptr, v_ptr, m_ptr, L,
                              S, E, EV, sks, ske, svs, sve, sml, sms, CAUSAL, HAS_MASK, True,
                              BLOCK_N, SPLIT)
    if SPLIT:   # the values were not scaled
        out = acc / l_i[:, None]
    else:
        v_scale = tl.load(vs_ptr + b * svsb + h * svsh + ev * svse, mask=ev < EV, other=1.0)
        out = acc * (v_scale[None, :] / l_i[:, None])
    tl.store(o_ptr + rows[:, None] * sol + ev[None, :] * soe, out,
             mask=(rows[:, None] < L) & (ev[None, :] < EV))
