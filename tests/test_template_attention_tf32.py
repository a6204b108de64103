"""The float32 flash-attention template (``templates/attention_tf32.py``) and its rewrites
(``rewrites/attention_tf32.py``): the kernel agrees with float64 attention under Triton's
interpreter (a child process: the interpreter is chosen when the kernel is defined), within
TF32's rounding, or float32's with its products split in three TF32 ones; the rewrites fire only
on GPU graphs; the engine offers the TF32 kernel only where it may propose TF32, the split one
where it may not, each beside the graph without it."""
import pytest
import torch
from helpers import run_triton_interpreted

from torch_cudal1.engines.base import SearchContext
from torch_cudal1.engines.builtin import BuiltinEngine
from torch_cudal1.graph.trace import trace_task
from torch_cudal1.options import Options
from torch_cudal1.rewrites import KERNEL_CHOICE, TF32_ONLY, apply_rewrites, attention_tf32
from torch_cudal1.task import Task
import torch_cudal1.templates  # noqa: F401 - registers torch.ops.cudal1.attention_tf32

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

pytest.importorskip("triton")


def test_the_kernel_agrees_with_float64_attention_where_tf32_is_allowed():
    """Ragged blocks of queries and keys, head dims that are no power of two, a value dim other
    than the key's, causal (top-left aligned) and not, 3-D and 4-D, strided (permuted) inputs."""
    out = run_triton_interpreted("""
        import torch
        from torch_cudal1.templates import attention_tf32 as m
        torch.manual_seed(0)
        torch.set_float32_matmul_precision("high")
        cases = [((1, 2, 40, 24), (1, 2, 72, 24), 24, False), ((2, 33, 16), (2, 50, 16), 40, True),
                 ((1, 1, 70, 32), (1, 1, 70, 32), 32, True), ((2, 3, 20, 8), (2, 3, 20, 8), 8, False)]
        for shape_q, shape_k, ev, causal in cases:
            q = torch.randn(*shape_q) * 2
            k = torch.randn(*shape_k)
            v = torch.randn(*shape_k[:-1], ev)
            if q.dim() == 4:   # (B, L, H, E) storage seen as (B, H, L, E): strided inputs
                q = q.transpose(1, 2).contiguous().transpose(1, 2)
            y = torch.ops.cudal1.attention_tf32(q, k, v, None, None, causal, list(range(q.dim())))
            ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                   is_causal=causal)
            assert y.shape == ref.shape and y.dtype == torch.float32 and y.is_contiguous()
            print(((y.double() - ref).norm() / ref.norm()).item())
        assert m._KERNEL is not None   # the template ran, not ATen's attention
        y = torch.ops.cudal1.attention_tf32(q, k, v, None, 0.3, False, [0, 1, 2, 3])
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=0.3)
        print(((y.double() - ref).norm() / ref.norm()).item())
        # masks broadcast to the scores: additive per head, boolean (a padding mask) per batch
        q, k, v = torch.randn(2, 3, 20, 16), torch.randn(2, 3, 36, 16), torch.randn(2, 3, 36, 16)
        for mask in (torch.randn(3, 20, 36), torch.arange(36) < torch.tensor([30, 7])[:, None, None, None]):
            y = torch.ops.cudal1.attention_tf32(q, k, v, mask, None, False, [0, 2, 1, 3])
            ref = torch.nn.functional.scaled_dot_product_attention(
                q.double(), k.double(), v.double(), mask if mask.dtype == torch.bool else mask.double())
            assert y.transpose(1, 2).is_contiguous()   # laid out (B, L, H, E), as asked
            print(((y.double() - ref).norm() / ref.norm()).item())
    """)
    errs = [float(e) for e in out.split()]
    print("norm-relative error against float64:", errs)   # shown with pytest -s
    # the products' inputs rounded to TF32 (so not float32 arithmetic), within float32's tolerance
    assert len(errs) == 7 and all(1e-5 < e < 1e-3 for e in errs), errs


def test_values_beyond_fp16s_range_keep_float32s():
    """The second product runs in fp16 on values scaled per column by a power of two: columns
    of 1e30 (fp16 overflows at 65504), of 1e-30 (it flushes below 6e-8) and of float32's
    subnormals come out each within TF32's error of float64; a column of zeros stays zeros, and
    an infinity stays one."""
    out = run_triton_interpreted("""
        import torch
        from torch_cudal1.templates import attention_tf32 as m
        torch.manual_seed(0)
        q, k = torch.randn(2, 2, 24, 16), torch.randn(2, 2, 40, 16)
        v = torch.randn(2, 2, 40, 5) * torch.tensor([1e30, 1e-30, 1.0, 0.0, 1e-39])   # subnormals
        y = torch.ops.cudal1.attention_tf32(q, k, v, None, None, False, [0, 1, 2, 3])
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
        for c in (0, 1, 2, 4):
            print(((y[..., c].double() - ref[..., c]).norm() / ref[..., c].norm()).item())
        print(int(y[..., 3].abs().max().item() == 0))
        v[0, 0, 5, 2] = float("inf")
        y = torch.ops.cudal1.attention_tf32(q, k, v, None, None, False, [0, 1, 2, 3])
        print(int(y[0, 0, :, 2].isinf().all().item()), int(y[0, 0, :, 0].isfinite().all().item()))
    """)
    *errs, zeros, inf, finite = [float(x) for x in out.split()]
    assert all(1e-6 < e < 1e-3 for e in errs), errs
    assert zeros == 1 and inf == 1 and finite == 1


def test_inputs_are_rounded_to_the_nearest_tf32_value():
    """A tensor core truncates the float32 it is fed; the kernel rounds first: every value lands
    on a TF32 value (13 low mantissa bits clear) no farther than either TF32 neighbour, infinities
    and zeros as they were."""
    torch.manual_seed(0)
    x = torch.cat([torch.randn(4000) * 10.0 ** torch.randint(-30, 30, (4000,)),
                   torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1 + 2 ** -11,
                                 -(1 + 3 * 2 ** -12), 3.4e38])])
    out = run_triton_interpreted(f"""
        import torch, triton, triton.language as tl
        from torch_cudal1.templates.attention_tf32_kernel import round_tf32

        @triton.jit
        def apply(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + i, round_tf32(tl.load(x_ptr + i, mask=i < N)), mask=i < N)

        x = torch.tensor({x.view(torch.int32).tolist()}, dtype=torch.int32).view(torch.float32)
        y = torch.empty_like(x)
        apply[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        print(y.view(torch.int32).tolist())
    """)
    y = torch.tensor(eval(out), dtype=torch.int32)
    assert (y & 0x1FFF == 0).all()                                # TF32 values
    down = (x.view(torch.int32) & ~0x1FFF).view(torch.float32)     # truncation (toward zero)
    up = (down.view(torch.int32) + 0x2000).view(torch.float32)     # the next TF32 value outward
    x64, y64 = x.double(), y.view(torch.float32).double()
    finite = up.isfinite()
    err = (x64 - y64).abs()[finite]
    assert (err <= (x64 - down.double()).abs()[finite]).all()
    assert (err <= (x64 - up.double()).abs()[finite]).all()
    special = y64[4000:]   # zeros and infinities as they were; a tie away from zero; past half
    assert special[:4].tolist() == [0.0, -0.0, float("inf"), float("-inf")]
    assert torch.signbit(y.view(torch.float32)[4001])
    assert special[4:6].tolist() == [1.0 + 2 ** -10, -(1 + 2 ** -10)]
    assert (y64 != x64).float().mean() > 0.9                       # random values do move


def test_the_template_runs_whatever_the_matmul_precision():
    """Its presence in a graph is the choice of TF32 attention (made only where the tf32 option
    allows it); PyTorch's default precision does not turn it off."""
    out = run_triton_interpreted("""
        import torch
        from torch_cudal1.templates import attention_tf32 as m
        torch.set_float32_matmul_precision("highest")   # PyTorch's default
        q, k, v = torch.randn(1, 2, 20, 16), torch.randn(1, 2, 30, 16), torch.randn(1, 2, 30, 16)
        y = torch.ops.cudal1.attention_tf32(q, k, v, None, None, True, [0, 1, 2, 3])
        assert m._KERNEL is not None
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.testing.assert_close(y, ref, rtol=2e-3, atol=2e-3)
        assert (y - ref).abs().max() > 1e-5   # TF32's rounding, not float32 arithmetic
        print("template")
    """)
    assert out.strip() == "template"


def test_off_the_gpu_the_op_is_atens_attention():
    q, k, v = torch.randn(1, 2, 20, 16), torch.randn(1, 2, 30, 16), torch.randn(1, 2, 30, 16)
    y = torch.ops.cudal1.attention_tf32(q, k, v, None, None, True, [0, 2, 1, 3])
    assert torch.equal(y, torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert y.transpose(1, 2).is_contiguous()


def test_shapes_it_does_not_take_fall_back():
    from torch_cudal1.templates.attention_tf32 import takes
    q, k = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16)     # grouped heads
    assert not takes(q, k, k)
    x = torch.randn(1, 2, 8, 160)                                  # a head dim over 128
    assert not takes(x, x, x) and not takes(q.double(), q.double(), q.double())
    assert takes(q, q, q) and takes(q, q, q, torch.ones(8, 8, dtype=torch.bool))
    assert not takes(q, q, q, torch.ones(8, 8, dtype=torch.float64))      # a mask in another dtype
    assert not takes(q, q, q, torch.ones(2, 1, 8, 8))                      # one that widens the batch


def _attention_task(mask: bool = False) -> Task:
    masked = " + m" if mask else ""
    inputs = "torch.randn(2, 2, 40, 16), torch.randn(2, 2, 48, 16), torch.randn(2, 2, 48, 16)"
    if mask:
        inputs += ", torch.randn(40, 48)"
    return Task(name="attn", source=(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, q, k, v{', m' if mask else ''}):\n"
        f"        return torch.softmax(q @ k.transpose(-2, -1) * 0.25{masked}, dim=-1) @ v\n\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n\n"
        "def get_init_inputs():\n    return []\n"))


def test_the_rewrite_fires_on_attention_of_a_gpu_graph_only(monkeypatch):
    assert "attention_tf32" in KERNEL_CHOICE and "attention_tf32" in TF32_ONLY
    gm = trace_task(_attention_task(), "cpu").gm
    assert "attention_tf32" not in apply_rewrites(gm).fired      # a CPU trace is not a GPU graph
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))   # as if traced on a GPU
    res = apply_rewrites(gm)
    assert {"fused_attention", "attention_tf32"} <= set(res.fired), res.counts
    assert any("cudal1.attention_tf32" in str(n.target) for n in res.gm.graph.nodes)
    masked = apply_rewrites(trace_task(_attention_task(mask=True), "cpu").gm)
    assert {"fused_attention", "attention_tf32"} <= set(masked.fired), masked.counts


USER_SDPA = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(64, 192)
        self.mha = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 16, 3, 4, 16).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 16, 64)
        return self.mha(y, y, y, need_weights=False)[0]


def get_inputs():
    return [torch.randn(2, 16, 64)]


def get_init_inputs():
    return []
"""


def test_the_rewrite_fires_on_the_users_own_fused_attention(monkeypatch):
    """F.scaled_dot_product_attention and nn.MultiheadAttention without weights trace to the
    backend's fused op (here the CPU's), which returns the log-sum-exp beside the output: the
    output alone is read, so both calls become the template, causal flag kept."""
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))
    task = Task(name="user_sdpa", source=USER_SDPA)
    traced = trace_task(task, "cpu")
    res = apply_rewrites(traced.gm)
    calls = [n for n in res.gm.graph.nodes if "cudal1.attention_tf32" in str(n.target)]
    assert len(calls) == 2 and sorted(n.args[5] for n in calls) == [False, True], res.gm.code
    # in the fused op's own layout, (B, L, H, E): the user's reshape after it traced as a view
    assert [n.args[6] for n in calls if n.args[5]] == [[0, 2, 1, 3]]
    assert not any("scaled_dot_product" in str(n.target) for n in res.gm.graph.nodes)
    from torch_cudal1.graph.trace import render_candidate_source
    from torch_cudal1.task import load_source
    mod = load_source(render_candidate_source(task, traced, res.gm), "cudal1_test_user_sdpa")
    torch.manual_seed(0)
    ref = mod.Model().eval()
    new = mod.ModelNew().eval()
    new.load_state_dict(ref.state_dict())
    x = mod.get_inputs()[0]
    with torch.no_grad():   # off the GPU (no interpreter here) the op is ATen's attention
        torch.testing.assert_close(new(x), ref(x), rtol=1e-5, atol=1e-5)


def _origins(task, tf32: str) -> list[str]:
    eng = BuiltinEngine(Options.resolve({"tf32": tf32}))
    return [c.origin for c in eng.propose(task, [], SearchContext(device="cpu", round=1, samples=2))]


def test_the_engine_offers_the_template_only_where_tf32_may_be_proposed(monkeypatch):
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))
    origins = _origins(_attention_task(), "on")
    with_it = [o for o in origins if "attention_tf32" in o]
    both = "builtin:rewrite(dead_code,fused_attention,attention_tf32)+inductor"
    assert with_it == [both, both + "+tf32"], origins   # the other products in float32, or TF32
    assert "builtin:rewrite(dead_code,fused_attention)+inductor" in origins   # and without it
    assert not any("attention_tf32" in o for o in _origins(_attention_task(), "off"))


# The fused graph's candidates run with the GPU tests (a minute more of Triton's interpreter on
# CI's two cores each); on the CPU the fused graph's split-kernel candidate goes through the
# verifier in test_at_pytorchs_default_precision_the_verifier_takes_the_split_kernel_only.
@pytest.mark.parametrize("which,suffix", [pytest.param("fused", "+tf32", marks=pytest.mark.gpu),
                                          ("user", "+tf32"),
                                          pytest.param("fused", "+inductor", marks=pytest.mark.gpu)])
def test_the_verifier_accepts_the_engines_template_candidate(which, suffix, monkeypatch, tmp_path):
    """The engine's own candidates (the rewritten graph through inductor, the other products in
    float32 or under the TF32 wrapper), the kernel run by Triton's interpreter in the verifier's
    child: fresh inputs, the float64 reference, settings put back after each call; for attention
    the rewrite fused, and for the user's own calls (the output in the fused op's layout)."""
    from torch_cudal1.verify import evaluate
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))
    task = _attention_task() if which == "fused" else Task(name="user_sdpa", source=USER_SDPA)
    cand, = [c for c in BuiltinEngine(Options.resolve({"tf32": "on"})).propose(
        task, [], SearchContext(device="cpu", round=1, samples=2))
        if "attention_tf32" in c.origin and c.origin.endswith(suffix)]
    assert "import torch_cudal1.templates" in cand.source
    # TF32 products: verified at the precision that allows them, the one tf32="on" opts in to
    # off the GPU through Triton's interpreter; the GPU-marked variant runs the compiled kernel
    on_gpu = torch.cuda.is_available()
    verdict, timing = evaluate(task, cand, build_cache_dir=str(tmp_path / "builds"), timeout_s=300,
                               time_budget_s=0.3, device="cuda" if on_gpu else "cpu",
                               extra_env={} if on_gpu else {"TRITON_INTERPRET": "1"},
                               precision=Options.resolve({"tf32": "on"}).verify_precision())
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert timing is not None and timing.median_ms > 0


@pytest.mark.gpu
def test_the_template_on_cuda_matches_float64_within_tf32_rounding():
    """On the GPU its products run in TF32: further from float64 than float32 arithmetic (so the
    template ran, not ATen's kernel), within the verifier's float32 tolerance (1e-3)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch.manual_seed(0)
    causal_mask = torch.ones(512, 512, device="cuda", dtype=torch.bool).tril()[None, None]
    for (b, h, length, e), causal, mask in [((2, 4, 16384, 32), False, None),
                                            ((4, 8, 1000, 64), True, None),
                                            ((1, 2, 513, 128), False, None),
                                            ((2, 2, 300, 80), True, None),
                                            ((2, 4, 512, 96), False, causal_mask)]:
        q, k, v = (torch.randn(b, h, length, e, device="cuda") for _ in range(3))
        y = torch.ops.cudal1.attention_tf32(q, k, v, mask, None, causal, [0, 2, 1, 3])
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                               mask, is_causal=causal)
        err = ((y.double() - ref).norm() / ref.norm()).item()
        assert 1e-5 < err < 1e-3, ((b, h, length, e), err)
        assert y.transpose(1, 2).is_contiguous()


def test_the_kernel_compiles_for_hopper_with_a_tile_that_fits():
    """Compiled ahead of time for sm_90 (Triton's own ptxas, no GPU): every head dim the
    template takes has a tile among CONFIGS within an H100/H200's shared memory per block."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from torch_cudal1.templates import attention_tf32 as template
    forward = template._kernel()
    consts = {"E_P2", "EV_P2", "CAUSAL", "HAS_MASK", "SPLIT", "BLOCK_M", "BLOCK_N"}
    for head, masked, split in ((32, False, False), (128, True, False), (32, False, True),
                                (128, True, True)):
        # the values in fp16 (scaled), or float32 as they are where the products are split
        sig = {n: "constexpr" if n in consts else "*fp16" if n == "v_ptr" and not split
               else "*fp32" if n.endswith("_ptr") else "fp32" if n == "scale" else "i32"
               for n in forward.arg_names}
        # the smallest tiles first: one that fits is enough (each compile takes seconds)
        for m, n, warps, stages in sorted(template.CONFIGS, key=lambda c: (c[0] * c[1], c[3])):
            kernel = triton.compile(
                ASTSource(fn=forward, signature=sig,
                          constexprs=dict(E_P2=head, EV_P2=head, CAUSAL=masked, HAS_MASK=masked,
                                          SPLIT=split, BLOCK_M=m, BLOCK_N=n)),
                target=GPUTarget("cuda", 90, 32),
                options={"num_warps": warps, "num_stages": stages})
            if kernel.metadata.shared <= 227 * 1024:
                break
        else:
            raise AssertionError(f"no tile fits: {(head, masked, split)}")
    # on the device those tiles are what triton.autotune picks from, per shape
    assert len(template._tuned(forward).configs) == len(template.CONFIGS)


def test_split_products_keep_float32s_precision():
    """``attention_3xtf32``: each product as three TF32 products on exactly split operands. Its
    error against float64 is float32 arithmetic's (within 3x of ATen's float32 attention), where
    the TF32 kernel's is a thousand times larger: causal and not, masks, 3-D and strided 4-D."""
    out = run_triton_interpreted("""
        import torch
        from torch_cudal1.templates import attention_tf32 as m
        torch.manual_seed(0)
        torch.set_float32_matmul_precision("highest")
        F = torch.nn.functional
        def err(y, ref):
            return ((y.double() - ref).norm() / ref.norm()).item()
        cases = [((1, 2, 40, 24), (1, 2, 72, 24), 24, False, None),
                 ((2, 33, 16), (2, 50, 16), 40, True, None),
                 ((2, 3, 20, 16), (2, 3, 36, 16), 16, False, torch.randn(3, 20, 36)),
                 ((2, 3, 20, 16), (2, 3, 36, 16), 16, False,
                  torch.arange(36) < torch.tensor([30, 7])[:, None, None, None])]
        for shape_q, shape_k, ev, causal, mask in cases:
            q, k = torch.randn(*shape_q) * 2, torch.randn(*shape_k)
            v = torch.randn(*shape_k[:-1], ev) * 1e3
            if q.dim() == 4:
                q = q.transpose(1, 2).contiguous().transpose(1, 2)
            dmask = mask.double() if mask is not None and mask.is_floating_point() else mask
            ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), dmask,
                                                 is_causal=causal)
            fp32 = F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
            order = list(range(q.dim()))
            split = torch.ops.cudal1.attention_3xtf32(q, k, v, mask, None, causal, order)
            tf32 = torch.ops.cudal1.attention_tf32(q, k, v, mask, None, causal, order)
            print(err(split, ref), err(fp32, ref), err(tf32, ref))
        assert m._KERNEL is not None   # the template ran, not ATen's attention
    """)
    rows = [[float(x) for x in line.split()] for line in out.strip().splitlines()]
    assert len(rows) == 4
    for split, fp32, tf32 in rows:
        assert split < 3 * fp32 + 1e-7 and split < 1e-6, rows
        assert tf32 > 100 * split, rows


def test_the_engine_offers_split_attention_where_tf32_may_not_be_proposed(monkeypatch):
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))
    assert "attention_3xtf32" in KERNEL_CHOICE and "attention_3xtf32" not in TF32_ONLY
    off = _origins(_attention_task(), "off")
    split = "builtin:rewrite(dead_code,fused_attention,attention_3xtf32)"
    assert [o for o in off if "attention_3xtf32" in o] == [split, split + "+inductor"], off
    assert "builtin:rewrite(dead_code,fused_attention)+inductor" in off   # and without it
    # where TF32 may be proposed, the TF32 kernel takes the attention: the faster of the two
    assert not any("attention_3xtf32" in o for o in _origins(_attention_task(), "on"))


@pytest.mark.parametrize("kernel,accepted", [("attention_3xtf32", True),
                                             ("attention_tf32", False)])
def test_at_pytorchs_default_precision_the_verifier_takes_the_split_kernel_only(
        kernel, accepted, monkeypatch, tmp_path):
    """At ``"highest"`` the verifier's float32 tolerance is float32 arithmetic's: the split
    kernel's candidate (the rewritten graph, run eagerly, the kernel under Triton's interpreter)
    passes it; the TF32 kernel's same graph is rejected as too far from float64."""
    from torch_cudal1.verify import evaluate
    monkeypatch.setattr(attention_tf32, "DEVICES", ("cuda", "cpu"))
    task = _attention_task(mask=True)
    tf32 = "off" if kernel == "attention_3xtf32" else "on"
    cand, = [c for c in BuiltinEngine(Options.resolve({"tf32": tf32})).propose(
        task, [], SearchContext(device="cpu", round=1, samples=2))
        if kernel in c.origin and c.origin.endswith(("+inductor" if kernel == "attention_tf32"
                                                     else ")"))]
    verdict, _ = evaluate(task, cand, build_cache_dir=str(tmp_path / "builds"), timeout_s=300,
                          time_budget_s=0.2, device="cpu", extra_env={"TRITON_INTERPRET": "1"},
                          precision="highest")
    assert verdict.accepted is accepted, (verdict.reason, verdict.detail)
    if not accepted:
        assert verdict.reason == "mismatch", (verdict.reason, verdict.detail)


@pytest.mark.gpu
def test_split_attention_on_cuda_matches_float64_as_float32_does():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch.manual_seed(0)
    F = torch.nn.functional
    for (b, h, length, e), causal in [((2, 4, 16384, 32), False), ((4, 8, 1000, 64), True),
                                      ((1, 2, 513, 128), False), ((2, 2, 300, 80), True)]:
        q, k, v = (torch.randn(b, h, length, e, device="cuda") for _ in range(3))
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
        y = torch.ops.cudal1.attention_3xtf32(q, k, v, None, None, causal, [0, 1, 2, 3])
        fp32 = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        err = ((y.double() - ref).norm() / ref.norm()).item()
        err32 = ((fp32.double() - ref).norm() / ref.norm()).item()
        assert err < max(4 * err32, 2e-6), ((b, h, length, e), err, err32)
