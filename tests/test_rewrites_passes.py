"""Each rewrite on a small traced task: it fires where it applies (and the rewritten graph
computes the same values), and leaves graphs where it does not apply alone."""
import pytest
import torch

from torch_cudal1.graph.trace import trace_task
from torch_cudal1.rewrites import apply_rewrites
from torch_cudal1.task import Task

HEAD = "import torch\nimport torch.nn as nn\n\n"


def _task(forward: str, inputs: str, init: str = "[]", init_body: str = "") -> Task:
    src = (HEAD + "class Model(nn.Module):\n    def __init__(self, *a):\n        super().__init__()\n"
           + (init_body or "") + "\n    def forward(self, " + forward + "\n\n"
           + f"def get_inputs():\n    return {inputs}\n\ndef get_init_inputs():\n    return {init}\n")
    return Task(source=src, name="t")


def _ops(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _check_same(task, traced, gm):
    """The rewritten graph agrees with the reference module on a real input draw."""
    import torch.utils._pytree as pytree
    mod = task.load()
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).eval()
    inputs = mod.get_inputs()
    with torch.no_grad():
        ref = model(*inputs)
        state = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]
        out = gm(*state, *inputs)
    got = pytree.tree_unflatten(list(out), pytree.treespec_loads(traced.out_spec))
    for r, g in zip(pytree.tree_leaves(ref), pytree.tree_leaves(got)):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


CASES = {
    "diag_broadcast": (_task("a, b):\n        return torch.diag(a) @ b, b @ torch.diag(a)",
                             "[torch.randn(16), torch.randn(16, 16)]"),
                       "aten.mm"),
    "matrix_chain": (_task("a, b, x):\n        return (a @ b) @ x",
                           "[torch.randn(32, 32), torch.randn(32, 32), torch.randn(32, 1)]"),
                     None),
    "value_range": (_task("x):\n        y = torch.relu(x)\n        "
                          "return torch.clamp(y, min=-1.0) + torch.min(y, torch.tensor(0.0))",
                          "[torch.randn(4, 5)]"),
                    "aten.minimum"),
    "size_one_reduction": (_task("x):\n        return torch.sum(x, dim=1), torch.softmax(x, dim=1), "
                                 "torch.amax(x, dim=1, keepdim=True), torch.logsumexp(x, dim=1)",
                                 "[torch.randn(4, 1, 3)]"),
                           "aten._softmax"),
    "sum_of_product": (_task("x):\n        return torch.sum(self.fc(x) / 2, dim=1, keepdim=True) * 1.5",
                             "[torch.randn(16, 32)]", init="[]",
                             init_body="        self.fc = nn.Linear(32, 64)"),
                       "aten.addmm"),
    "cse": (_task("x):\n        return torch.exp(x) + torch.exp(x)", "[torch.randn(4, 5)]"), None),
    "fused_attention": (_task("q, k, v, m):\n        s = torch.bmm(q, k.transpose(1, 2)) / 4.0 + m\n"
                              "        return torch.bmm(torch.softmax(s, dim=-1), v)",
                              "[torch.randn(6, 10, 16), torch.randn(6, 12, 16), torch.randn(6, 12, 16),"
                              " torch.randn(1, 10, 12)]"),
                        "aten._softmax"),
    "dead_code": (_task("x):\n        unused = torch.exp(x)\n        return x * 2", "[torch.randn(4, 5)]"),
                  "aten.exp"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewrite_fires_and_is_exact(name):
    task, gone = CASES[name]
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert name in result.fired, result.counts
    if gone:
        assert not any(op.startswith(gone + ".") for op in _ops(result.gm)), result.gm.code
    _check_same(task, traced, result.gm)


def test_matrix_chain_picks_cheap_order():
    task, _ = CASES["matrix_chain"]
    gm = apply_rewrites(trace_task(task, "cpu").gm).gm
    mms = [n for n in gm.graph.nodes if n.op == "call_function" and "mm" in str(n.target)]
    # a @ (b @ x): the first product computed is b @ x (a placeholder times a placeholder, 32x1)
    first = mms[0]
    assert tuple(first.meta["val"].shape) == (32, 1)


def test_value_range_folds_constant_and_drops_its_producer():
    task = _task("x):\n        return torch.minimum(torch.relu(x @ x), torch.zeros(()))",
                 "[torch.randn(6, 6)]")
    traced = trace_task(task, "cpu")
    gm = apply_rewrites(traced.gm).gm
    ops = _ops(gm)
    assert "aten.mm.default" not in ops and "aten.full.default" in ops, gm.code
    _check_same(task, traced, gm)


def test_bounds_that_can_bind_are_kept():
    # clamp(x, min=0) on an unbounded x and min(x, relu(y)) must stay.
    task = _task("x, y):\n        return torch.clamp(x, min=0.0) + torch.min(x, torch.relu(y))",
                 "[torch.randn(4, 5), torch.randn(4, 5)]")
    result = apply_rewrites(trace_task(task, "cpu").gm)
    assert not result.fired
    assert "aten.clamp.default" in _ops(result.gm) and "aten.minimum.default" in _ops(result.gm)


@pytest.mark.parametrize("forward,inputs", [
    ("a, b):\n        return a @ b", "[torch.randn(8, 8), torch.randn(8, 8)]"),
    ("x):\n        return torch.sum(x, dim=1)", "[torch.randn(4, 3)]"),
    ("a, b, c):\n        return (a @ b) @ c", "[torch.randn(2, 64), torch.randn(64, 2), torch.randn(2, 64)]"),
])
def test_no_rewrite_where_none_applies(forward, inputs):
    result = apply_rewrites(trace_task(_task(forward, inputs), "cpu").gm)
    assert result.fired == [], result.counts


def test_outputs_never_alias_inputs_after_rewrites():
    task = _task("x):\n        return torch.sum(x, dim=1, keepdim=True)", "[torch.randn(4, 1)]")
    gm = apply_rewrites(trace_task(task, "cpu").gm).gm
    x = torch.randn(4, 1)
    (out,) = gm(x)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


def dropout_graph_task():
    """A rendered task whose graph still holds inference-mode dropout (make_fx would have
    decomposed it away; graphs from elsewhere may keep it)."""
    import torch.fx as fx
    from torch_cudal1.graph.render import render_task
    g = fx.Graph()
    x = g.placeholder("x")
    d = g.call_function(torch.ops.aten.dropout.default, (x, 0.5, False))
    y = g.call_function(torch.ops.aten.mul.Tensor, (d, 2.0))
    g.output([y])
    gm = fx.GraphModule(torch.nn.Module(), g)
    return render_task(gm, [torch.randn(4, 5)], name="dropout")


def test_noop_dropout_on_a_task_graph():
    task = dropout_graph_task()
    traced = trace_task(task, "cpu")
    assert traced.from_task_graph
    result = apply_rewrites(traced.gm)
    assert "noop_dropout" in result.fired
    assert "aten.dropout.default" not in _ops(result.gm)
    x = torch.randn(4, 5)
    torch.testing.assert_close(result.gm(x)[0], x * 2)


def test_multihead_attention_becomes_one_fused_attention_call():
    """nn.MultiheadAttention (its averaged weights unused): the scores matrix is never built."""
    task = _task("x):\n        out, _ = self.attn(x, x, x)\n        return out",
                 "[torch.randn(40, 2, 32)]", init_body="        self.attn = nn.MultiheadAttention(32, 4)")
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "fused_attention" in result.fired, result.counts
    ops = _ops(result.gm)
    assert "aten.scaled_dot_product_attention.default" in ops and "aten._softmax.default" not in ops
    _check_same(task, traced, result.gm)


@pytest.mark.parametrize("forward", [
    # the probabilities are an output too: the matrix must be built anyway
    "q, k, v):\n        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)\n"
    "        return torch.bmm(p, v), p",
    # softmax over another dim is not attention
    "q, k, v):\n        return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=1), v)",
])
def test_attention_that_is_not_the_pattern_is_left_alone(forward):
    task = _task(forward, "[torch.randn(2, 8, 4), torch.randn(2, 8, 4), torch.randn(2, 8, 4)]")
    result = apply_rewrites(trace_task(task, "cpu").gm)
    assert "fused_attention" not in result.fired, result.counts


def test_causal_attention_in_four_dims_becomes_one_fused_attention_call():
    """minGPT's attention: 4-D heads, a scale, masked_fill(-inf) with a causal buffer."""
    body = ("        self.register_buffer('bias', torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))")
    fwd = ("q, k, v):\n        T = q.size(-2)\n"
           "        att = (q @ k.transpose(-2, -1)) * (1.0 / 8.0)\n"
           "        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\n"
           "        return torch.softmax(att, dim=-1) @ v")
    task = _task(fwd, "[torch.randn(2, 3, 16, 8), torch.randn(2, 3, 16, 8), torch.randn(2, 3, 16, 8)]",
                 init_body=body)
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "fused_attention" in result.fired, result.counts
    ops = _ops(result.gm)
    assert "aten._softmax.default" not in ops and "aten.masked_fill.Scalar" not in ops, result.gm.code
    _check_same(task, traced, result.gm)


def _convt_task(dims: int, args: str, shape: str):
    cls = f"ConvTranspose{dims}d"
    return _task("x):\n        return self.up(x)", f"[torch.randn({shape})]",
                 init_body=f"        self.up = nn.{cls}({args})")


@pytest.mark.parametrize("dims,args,shape", [
    (1, "6, 4, 3", "2, 6, 10"),
    (2, "4, 6, 3, padding=1, bias=False", "2, 4, 7, 9"),
    (2, "4, 6, (3, 5), padding=(1, 2), dilation=(2, 1), groups=2", "2, 4, 7, 9"),
    (3, "3, 5, 3", "2, 3, 4, 5, 6"),
    # strided: one plain convolution per output phase, interleaved
    (1, "6, 4, 4, stride=2, padding=1", "2, 6, 10"),
    (2, "4, 6, 3, stride=2, padding=1, output_padding=1", "2, 4, 7, 9"),
    (2, "4, 6, (3, 5), stride=(2, 3), padding=(1, 2), groups=2", "2, 4, 7, 9"),
    (2, "4, 6, 2, stride=2", "2, 4, 5, 6"),                       # kernel == stride: no overlap
    (2, "4, 6, 3, stride=(1, 2), padding=(3, 0)", "2, 4, 7, 9"),  # a padding wider than the kernel
    (3, "3, 5, 3, stride=2, padding=1, output_padding=(1, 0, 1)", "2, 3, 4, 5, 3"),
])
def test_transposed_conv_becomes_plain_convs(dims, args, shape):
    """Flipped kernel, channels swapped within groups, padding d*(k-1)-p; strided ones by
    phases: the same values, and no transposed convolution left."""
    task = _convt_task(dims, args, shape)
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "transposed_conv_as_conv" in result.fired, result.counts
    convs = [n for n in result.gm.graph.nodes if n.target is torch.ops.aten.convolution.default]
    assert convs and not any(n.args[6] for n in convs), result.gm.code   # none transposed
    _check_same(task, traced, result.gm)


@pytest.mark.parametrize("dims,args,shape", [
    (2, "4, 6, 3, stride=2, dilation=2", "2, 4, 7, 9"),            # strided and dilated
    (2, "4, 6, 1, stride=2", "2, 4, 7, 9"),                        # a phase with no taps
    (1, "6, 4, 3, padding=3", "2, 6, 10"),                         # wider than the kernel
])
def test_other_transposed_convs_are_left_alone(dims, args, shape):
    result = apply_rewrites(trace_task(_convt_task(dims, args, shape), "cpu").gm)
    assert "transposed_conv_as_conv" not in result.fired, result.counts


def test_a_kernel_choice_is_proposed_beside_the_exact_removals_alone():
    """A transposed convolution as plain ones may be slower on some device: the engine proposes
    the rewritten graph with it and without it (the other rewrites only), and timing decides."""
    from torch_cudal1.engines.base import SearchContext
    from torch_cudal1.engines.builtin import BuiltinEngine
    from torch_cudal1.options import Options
    task = _task("x):\n        unused = torch.exp(x)\n        return self.up(x)",
                 "[torch.randn(2, 4, 7, 9)]",
                 init_body="        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2)")
    origins = [c.origin for c in BuiltinEngine(Options.resolve({})).propose(
        task, [], SearchContext(device="cpu", round=1, samples=2))]
    assert "builtin:rewrite(dead_code,transposed_conv_as_conv)" in origins, origins
    assert "builtin:rewrite(dead_code)" in origins and "builtin:rewrite(dead_code)+inductor" in origins


def test_several_kernel_choices_are_also_proposed_one_at_a_time():
    """Two kernel swaps that fired are proposed together and each alone (through inductor): one
    can slow the other's kernels (KernelBench L2_50 on an H200)."""
    from torch_cudal1.engines.base import SearchContext
    from torch_cudal1.engines.builtin import BuiltinEngine
    from torch_cudal1.options import Options
    task = _task("x):\n        return self.pool(self.up(x))", "[torch.randn(2, 4, 7, 9)]",
                 init_body="        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2)\n"
                           "        self.pool = nn.AvgPool2d(2)")
    cands = BuiltinEngine(Options.resolve({})).propose(
        task, [], SearchContext(device="cpu", round=1, samples=2))
    origins = [c.origin for c in cands]
    both = "builtin:rewrite(transposed_conv_as_conv,avg_pool_as_conv)"
    assert both in origins and both + "+inductor" in origins, origins
    for one in ("transposed_conv_as_conv", "avg_pool_as_conv"):
        assert f"builtin:rewrite({one})+inductor" in origins, origins
        assert f"builtin:rewrite({one})" not in origins   # the eager graph only with both
    # each single one computes the model's output (the graph, as the candidate renders it)
    traced = trace_task(task, "cpu")
    for one in ("transposed_conv_as_conv", "avg_pool_as_conv"):
        result = apply_rewrites(traced.gm, only=[one])
        assert result.fired == [one], result.counts
        _check_same(task, traced, result.gm)
    # a single kernel swap: no such variants
    single = _task("x):\n        return self.up(x)", "[torch.randn(2, 4, 7, 9)]",
                   init_body="        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2)")
    origins = [c.origin for c in BuiltinEngine(Options.resolve({})).propose(
        single, [], SearchContext(device="cpu", round=1, samples=2))]
    assert origins == ["builtin:rewrite(transposed_conv_as_conv)",
                       "builtin:rewrite(transposed_conv_as_conv)+inductor"], origins


def test_a_difference_with_itself_folds_to_zero_and_its_products_become_dead():
    """``max(x @ w, dim=1, keepdim) - mean`` of that over its size-1 dim is ``y - y``: zero, and
    ``gelu(0)`` is evaluated once; the product and the max are dead (KernelBench L2_80's shape)."""
    task = _task("x, w):\n        y = torch.max(x @ w, dim=1, keepdim=True).values\n"
                 "        return torch.nn.functional.gelu(y - y.mean(dim=1, keepdim=True))",
                 "[torch.randn(8, 16), torch.randn(16, 32)]")
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "value_range" in result.fired, result.counts
    ops = _ops(result.gm)
    assert not any("mm" in op or "max" in op or "gelu" in op for op in ops), result.gm.code
    _check_same(task, traced, result.gm)


def test_pointwise_ops_of_constants_are_evaluated_in_their_dtype():
    task = _task("x):\n        c = torch.zeros_like(x) + 2.0\n        return x * torch.exp(c), torch.sigmoid(x - x)",
                 "[torch.randn(4, 5)]")
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    ops = _ops(result.gm)
    assert "aten.exp.default" not in ops and "aten.sigmoid.default" not in ops, result.gm.code
    _check_same(task, traced, result.gm)


def test_a_difference_of_two_values_is_kept():
    task = _task("x, y):\n        return torch.relu(x - y)", "[torch.randn(4, 5), torch.randn(4, 5)]")
    result = apply_rewrites(trace_task(task, "cpu").gm)
    assert "aten.sub.Tensor" in _ops(result.gm) and not result.fired


def test_logsumexp_over_a_size_one_dim_is_its_input_even_for_infinities():
    task = _task("x):\n        return torch.logsumexp(x, dim=1)", "[torch.randn(4, 1, 3)]")
    traced = trace_task(task, "cpu")
    gm = apply_rewrites(traced.gm).gm
    assert "aten.logsumexp.default" not in _ops(gm), gm.code
    x = torch.tensor([[[1.0, float("inf"), -float("inf")]]])
    torch.testing.assert_close(gm(x)[0], torch.logsumexp(x, dim=1))


@pytest.mark.parametrize("forward,inputs", [
    ("a, b):\n        return (a @ b).sum(dim=-1)", "[torch.randn(8, 16), torch.randn(16, 32)]"),
    ("a, b, c):\n        return torch.addmm(c, a, b).sum(1, keepdim=True)",
     "[torch.randn(8, 16), torch.randn(16, 32), torch.randn(8, 1)]"),
    ("a, b, c):\n        return torch.addmm(c, a, b).sum(1)",
     "[torch.randn(8, 16), torch.randn(16, 32), torch.randn(8, 32)]"),
])
def test_a_sum_over_a_products_columns_multiplies_by_the_summed_columns(forward, inputs):
    task = _task(forward, inputs)
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "sum_of_product" in result.fired, result.counts
    mms = [n for n in result.gm.graph.nodes if n.op == "call_function" and "mm" in str(n.target)]
    assert [tuple(n.meta["val"].shape) for n in mms] == [(8, 1)], result.gm.code
    _check_same(task, traced, result.gm)


@pytest.mark.parametrize("forward", [
    "a, b):\n        return (a @ b).sum(dim=0)",                      # over the rows
    "a, b):\n        y = a @ b\n        return y.sum(dim=1), y",     # the product is used too
    "a, b):\n        return torch.relu(a @ b).sum(dim=1)",           # not linear in between
])
def test_sums_that_are_not_over_a_products_columns_alone_are_left(forward):
    task = _task(forward, "[torch.randn(8, 16), torch.randn(16, 32)]")
    result = apply_rewrites(trace_task(task, "cpu").gm)
    assert "sum_of_product" not in result.fired


def _pool_task(module: str, shape: str, dtype: str = "") -> Task:
    return _task("x):\n        return self.pool(x)", f"[torch.randn({shape}{dtype})]",
                 init_body=f"        self.pool = nn.{module}")


@pytest.mark.parametrize("module,shape", [
    ("AvgPool3d(3, stride=2, padding=1)", "2, 4, 9, 8, 7"),
    ("AvgPool2d(2)", "2, 3, 8, 9"),
    ("AvgPool2d((3, 2), stride=(1, 2), padding=(1, 0), divisor_override=4)", "2, 3, 8, 9"),
    ("AvgPool2d(3, stride=2, count_include_pad=False)", "2, 3, 9, 9"),   # no padding to count
    ("AvgPool2d(3, stride=2, padding=1, ceil_mode=True)", "2, 3, 9, 9"),  # no window past the edge
    ("AvgPool1d(3, stride=1, padding=1)", "2, 5, 10"),                    # traced as a 2-D pool
])
def test_an_average_pool_becomes_a_depthwise_convolution(module, shape):
    task = _pool_task(module, shape)
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "avg_pool_as_conv" in result.fired, result.counts
    ops = _ops(result.gm)
    assert "aten.convolution.default" in ops and not any("avg_pool" in o for o in ops), ops
    _check_same(task, traced, result.gm)


@pytest.mark.parametrize("module,shape", [
    ("AvgPool2d(3, stride=2, padding=1, count_include_pad=False)", "2, 3, 9, 9"),
    ("AvgPool2d(2, stride=2, ceil_mode=True)", "2, 3, 9, 9"),   # a last window past the edge
    ("AvgPool2d(2)", "3, 8, 9"),                               # unbatched
])
def test_average_pools_a_convolution_would_change_are_left_alone(module, shape):
    result = apply_rewrites(trace_task(_pool_task(module, shape), "cpu").gm)
    assert "avg_pool_as_conv" not in result.fired, result.counts


def test_an_average_pool_in_bfloat16_stays_within_its_rounding():
    """The constant tap rounds to the input's dtype (1/9 in bfloat16): the convolution answers
    within bfloat16's own precision of the pool."""
    task = _pool_task("AvgPool2d(3, stride=1, padding=1)", "2, 3, 8, 8", ", dtype=torch.bfloat16")
    traced = trace_task(task, "cpu")
    result = apply_rewrites(traced.gm)
    assert "avg_pool_as_conv" in result.fired
    x = torch.randn(2, 3, 8, 8, dtype=torch.bfloat16)
    ref = torch.nn.functional.avg_pool2d(x, 3, 1, 1)
    got = result.gm(x)[0]
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), ref.float(), rtol=2e-2, atol=2e-2)


def test_an_output_a_rewrite_replaced_keeps_the_reference_layout():
    """A replacement that computes an output's values in another layout (a fused kernel writing
    a transposed result) is made contiguous again where the reference's was: the verifier
    refuses other layouts (``stride``) and a caller's ``view`` needs it. An output the rewrites
    left alone is not touched, nor one whose reference layout was not contiguous."""
    from torch_cudal1.graph.trace import propagate_meta
    from torch_cudal1.rewrites import outputs
    aten = torch.ops.aten
    traced = trace_task(_task("x):\n        return x * 2.0, (x * 3.0).t()", "[torch.randn(4, 6)]"),
                        "cpu")
    gm = traced.gm
    before = outputs.layouts(gm)
    assert [b[1] for b in before] == [True, False]
    g = gm.graph
    out = next(n for n in g.nodes if n.op == "output")
    doubled, tripled_t = out.args[0]
    with g.inserting_before(out):   # the same values as ``doubled``, laid out transposed
        t = g.call_function(aten.permute.default, (doubled, [1, 0]))
        c = g.call_function(aten.clone.default, (t,), {"memory_format": torch.contiguous_format})
        same = g.call_function(aten.permute.default, (c, [1, 0]))
    out.args = ([same, tripled_t],)
    gm.recompile()
    propagate_meta(gm)
    x = torch.randn(4, 6)
    assert not gm(x)[0].is_contiguous()
    assert outputs.protect(gm, before) == 1
    gm.recompile()
    got = gm(x)
    assert got[0].is_contiguous() and torch.equal(got[0], x * 2.0)
    assert not got[1].is_contiguous()   # the reference's own transposed view, as it was
    assert "aten.contiguous.default" in _ops(gm)
