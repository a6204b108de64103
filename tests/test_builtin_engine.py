"""The built-in engine: candidates only where a strategy applies, each accepted by the verifier."""
import pytest
import torch

from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict
from torch_cudal1.engines.base import SearchContext
from torch_cudal1.engines.builtin import BuiltinEngine, cudagraph
from torch_cudal1.options import Options
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

DIAG = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.lin = nn.Linear(64, 64)

    def forward(self, a, b):
        y = torch.diag(a) @ b
        return torch.clamp(torch.relu(self.lin(y)), min=-1.0) * self.scale


def get_inputs():
    return [torch.randn(64), torch.randn(64, 64)]


def get_init_inputs():
    return [0.5]
'''

PLAIN = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.tanh(a @ b)


def get_inputs():
    return [torch.randn(16, 16), torch.randn(16, 16)]


def get_init_inputs():
    return []
'''


def _ctx(r=1, device="cpu"):
    return SearchContext(device=device, round=r, samples=2)


def test_rewrite_candidates_are_accepted_and_fired():
    task = Task(DIAG, name="diag")
    eng = BuiltinEngine(Options.resolve({}))
    cands = eng.propose(task, [], _ctx())
    origins = [c.origin for c in cands]
    assert len(cands) == 2 and all("diag_broadcast" in o and "value_range" in o for o in origins)
    assert origins[1].endswith("+inductor")
    assert cands[0].meta["rewrites"]["diag_broadcast"] == 1
    verdict, _ = evaluate(task, cands[0], device="cpu", time_it=False)
    assert verdict.accepted, verdict
    # The inductor variant compiles the same graph. (Run in-process: the verifier currently
    # rejects every torch.compile candidate, the inductor baseline included, because importing
    # dynamo wraps torch.manual_seed — see the report.)
    assert "torch.compile(_cudal1_graph_fn)" in cands[1].source
    from torch_cudal1.task import load_source
    mod = load_source(cands[1].source, "cudal1_test_inductor_cand")
    torch.manual_seed(0)
    ref = mod.Model(0.5).eval()
    torch.manual_seed(0)
    new = mod.ModelNew(0.5).eval()
    a, b = mod.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(new(a, b), ref(a, b), rtol=1e-4, atol=1e-5)
    # nothing new later: the search stops early
    assert eng.propose(task, [], _ctx(2)) == []
    assert eng.propose(task, [], _ctx(1)) == []


def test_no_candidate_where_nothing_applies():
    assert BuiltinEngine(Options.resolve({})).propose(Task(PLAIN, name="plain"), [], _ctx()) == []


def test_untraceable_task_gives_no_candidate():
    src = PLAIN.replace("return torch.tanh(a @ b)",
                        "return a if a.sum() > 0 else b")   # data-dependent control flow
    assert BuiltinEngine(Options.resolve({})).propose(Task(src, name="dyn"), [], _ctx()) == []


def test_rendered_task_graph_candidate_is_accepted():
    from test_rewrites_passes import dropout_graph_task
    task = dropout_graph_task()
    cands = BuiltinEngine(Options.resolve({})).propose(task, [], _ctx())
    assert cands and "noop_dropout" in cands[0].origin
    verdict, _ = evaluate(task, cands[0], device="cpu", time_it=False)
    assert verdict.accepted, verdict


def test_cudagraph_wrapper_runs_its_inner_model_off_the_gpu():
    # On CPU tensors the wrapper falls through to the wrapped ModelNew: same answers.
    from torch_cudal1.engines.baselines import baseline_candidate
    task = Task(DIAG, name="diag")
    src = cudagraph.wrap(baseline_candidate(task, "eager").source)
    verdict, _ = evaluate(task, Candidate(src, "builtin:cudagraph"), device="cpu", time_it=False)
    assert verdict.accepted, verdict


def _wrapped(forward_src: str):
    ns = {"__name__": "wrapped_under_test"}
    src = ("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n"
           f"        return {forward_src}\n")
    exec(compile(cudagraph.wrap(src), "<wrapped>", "exec"), ns)
    return ns["ModelNew"]()


def _as_if_captured(m, inputs):
    """What ``_capture`` leaves behind, with a stand-in graph whose replay recomputes into the
    captured outputs (CPU: no CUDA graphs here); the per-call path is then the real one."""
    import torch.utils._pytree as pytree
    static = [x.clone() for x in inputs]
    out = m.inner(*static)
    leaves, spec = pytree.tree_flatten(out)

    class Graph:
        def replay(self):
            for leaf, new in zip(leaves, pytree.tree_flatten(m.inner(*static))[0]):
                leaf.copy_(new)
    m._plan.settled, m._plan.copied = True, tuple(range(len(inputs)))
    m._cg = (Graph(), static, leaves, None if isinstance(out, torch.Tensor) else spec,
             len(inputs), m._sig(inputs, m._plan.copied), m._plan.copied)


@pytest.mark.parametrize("forward_src", ["x * y", "(x * y, x + y)"], ids=["tensor", "tuple"])
def test_the_replay_path_gives_fresh_right_outputs_and_steps_aside_for_new_shapes(forward_src):
    torch.set_grad_enabled(False)
    try:
        m = _wrapped(forward_src)
        _as_if_captured(m, [torch.randn(4, 3), torch.randn(4, 3)])
        draws = [(torch.randn(4, 3), torch.randn(4, 3)) for _ in range(3)]
        outs = [m(*d) for d in draws]
        for (x, y), o in zip(draws, outs):   # each call's own answer, untouched by later calls
            torch.testing.assert_close(o, m.inner(x, y))
        assert m._sig(draws[0], (0, 1)) == m._cg[5]
        # another shape (or layout) does not match the capture: off the GPU, the inner model
        wide = (torch.randn(4, 5), torch.randn(4, 5))
        assert m._sig(wide, (0, 1)) != m._cg[5]
        torch.testing.assert_close(m(*wide), m.inner(*wide))
        t = torch.randn(3, 4).t()
        assert m._sig((t, t), (0, 1)) != m._cg[5]
    finally:
        torch.set_grad_enabled(True)


def _attempt(origin, ms, source="x"):
    return Attempt(Candidate(source, origin), Verdict.ok(), Timing(ms, 0.0, 5))


def test_graph_round_wraps_the_fastest_short_candidate():
    eng = BuiltinEngine(Options.resolve({}))
    hist = [_attempt("baseline:eager", 0.5), _attempt("baseline:inductor", 0.2, "class ModelNew: pass")]
    (c,) = eng.propose(Task(PLAIN), hist, _ctx(2, "cuda"))
    assert c.origin == "builtin:inductor+cudagraph" and "_Cudal1GraphInner = ModelNew" in c.source
    assert eng.propose(Task(PLAIN), hist, _ctx(2, "cpu")) == []
    slow = [_attempt("baseline:inductor", 50.0)]
    assert BuiltinEngine(None).propose(Task(PLAIN), slow, _ctx(2, "cuda")) == []


def test_graph_round_wraps_long_candidates_where_round_1_measured_launches():
    """A deep network on a loaded host: the reference in graph replay ran in a quarter of the
    reference's time, so the fastest candidate and the fastest inductor one (fewest launches) are
    wrapped, however long; where replay saved next to nothing, a long candidate is not."""
    def origins(hist):
        return [c.origin for c in BuiltinEngine(Options.resolve({})).propose(
            Task(PLAIN), hist, _ctx(2, "cuda"))]
    launch_bound = [_attempt("baseline:eager", 13.4), _attempt("builtin:cudagraph", 3.5),
                    _attempt("baseline:inductor", 26.7, "class ModelNew: pass"),
                    _attempt("builtin:channels-last", 12.1, "class ModelNew: x = 1")]
    assert origins(launch_bound) == ["builtin:channels-last+cudagraph", "builtin:inductor+cudagraph"]
    compute_bound = [_attempt("baseline:eager", 8.0), _attempt("builtin:cudagraph", 7.9),
                     _attempt("baseline:inductor", 7.0)]
    assert origins(compute_bound) == []
    short = [_attempt("baseline:eager", 0.5), _attempt("builtin:cudagraph", 0.5),
             _attempt("builtin:tf32", 0.2, "class ModelNew: y = 1"),
             _attempt("baseline:inductor", 0.3)]
    # short: the fastest, and as it is a TF32 one whose replay may fail the tolerance on other
    # draws, the fastest in full precision too
    assert origins(short) == ["builtin:tf32+cudagraph", "builtin:inductor+cudagraph"]
    assert origins(short[:3]) == ["builtin:tf32+cudagraph"]   # nothing else: the fastest alone
    # the reference's own capture failed (a host-to-device copy in its forward): nothing was
    # measured, so the fastest candidate is tried once, however long
    uncapturable = [_attempt("baseline:eager", 14.8), _attempt("baseline:inductor", 8.1),
                    Attempt(Candidate("x", "builtin:cudagraph"), Verdict.reject("crash", "capture")),
                    _attempt("builtin:rewrite(cse)+inductor", 5.6, "class ModelNew: z = 1")]
    assert origins(uncapturable) == ["builtin:rewrite(cse)+inductor+cudagraph"]
    assert origins(uncapturable[:2] + uncapturable[3:]) == []   # not tried at all: as before


def test_search_with_builtin_engine_picks_a_verified_candidate(cache_dir):
    from torch_cudal1.search import run_search
    opts = Options.resolve({"baselines": "eager", "rounds": 2, "trials": 2, "progress": False,
                            "engine": "builtin"})
    res = run_search(Task(DIAG, name="diag"), opts, "cpu")
    try:
        tried = [a for a in res.attempts if a.candidate.origin.startswith("builtin:")
                 and not a.candidate.origin.endswith("+inductor")]   # see the note above
        assert tried and all(a.verdict.accepted and a.timing for a in tried), [a.verdict for a in tried]
        assert res.stop_reason == "engine has no new candidates"
    finally:
        res.cleanup()


@pytest.mark.gpu
def test_cudagraph_candidates_verify_on_gpu():
    task = Task(DIAG, name="diag")
    eng = BuiltinEngine(Options.resolve({}))
    cands = eng.propose(task, [], _ctx(1, "cuda"))
    assert any(c.origin == "builtin:cudagraph" for c in cands)
    for c in cands:
        verdict, timing = evaluate(task, c, device="cuda", time_it=True)
        if "tf32" in c.origin and not verdict.accepted:
            # two products in a row in TF32 may exceed the float32 tolerance: refused as such
            assert verdict.reason == "mismatch", (c.origin, verdict)
            continue
        assert verdict.accepted, (c.origin, verdict)
        assert timing is not None and timing.median_ms > 0


@pytest.mark.gpu
def test_cudagraph_replay_serves_calls_switching_between_inference_mode_and_no_grad():
    """A serving loop may capture under inference_mode and call again under no_grad (or the
    other way round): the replay's static buffers take both."""
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.task import load_source
    task = Task(DIAG, name="diag")
    mod = load_source(cudagraph.wrap(baseline_candidate(task, "eager").source), "cudal1_test_cg_modes")
    init = mod.get_init_inputs()
    torch.manual_seed(0)
    new = mod.ModelNew(*init).cuda()
    torch.manual_seed(0)   # the same weights
    ref = mod.Model(*init).cuda()
    for ctx in (torch.inference_mode, torch.no_grad, torch.inference_mode, torch.no_grad):
        a, b = [x.cuda() for x in mod.get_inputs()]
        with ctx():
            got, want = new(a, b), ref(a, b)
        torch.testing.assert_close(got, want)
    assert new._cg is not None   # replayed, not run eagerly


ELEMENTWISE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a):
        return torch.tanh(a) * 2


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
'''

ROWWISE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a):
        return torch.softmax(a, dim=-1) * 2


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
'''


def test_max_autotune_is_a_candidate_on_gpus_for_graphs_it_tunes(monkeypatch):
    """Inductor's max-autotune (Triton templates for products and convolutions, reductions' block
    sizes, tuned on the device) is proposed on a GPU where the graph has such ops, unless it is
    measured as a baseline already or switched off."""
    from torch_cudal1.graph import trace
    real = trace.trace_task
    monkeypatch.setattr(trace, "trace_task", lambda task, device: real(task, "cpu"))  # no GPU here

    def origins(src, device="cuda", **opts):
        cands = BuiltinEngine(Options.resolve(opts)).propose(Task(src), [], _ctx(1, device))
        return {c.origin for c in cands}
    assert "builtin:inductor-max-autotune" in origins(PLAIN)
    assert "builtin:inductor-max-autotune" in origins(DIAG)             # nn.Linear: addmm
    assert "builtin:inductor-max-autotune" in origins(ROWWISE)            # a reduction
    assert "builtin:inductor-max-autotune" not in origins(ELEMENTWISE)
    assert "builtin:inductor-max-autotune" not in origins(PLAIN, "cpu")
    assert "builtin:inductor-max-autotune" not in origins(PLAIN, max_autotune="off")
    assert "builtin:inductor-max-autotune" not in origins(
        PLAIN, baselines="eager,inductor,inductor-max-autotune")
    assert "builtin:inductor-max-autotune" in origins(ELEMENTWISE, "cpu", max_autotune="on")


CONV_TOWER = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """{n} convolutions of distinct widths, each a shape to tune, run twice (no new shapes)."""
    def __init__(self):
        super().__init__()
        widths = [4 + k for k in range({n} + 1)]
        self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1) for a, b in zip(widths, widths[1:]))
        self.dilated = nn.Conv2d(widths[-1], widths[-1], 3, padding=2, dilation=2)   # no template
        self.up = nn.ConvTranspose2d(widths[-1], 4, 2, stride=2)                    # no template

    def forward(self, x):
        for _ in range(2):
            y = x
            for conv in self.convs:
                y = torch.relu(conv(y))
        return self.up(self.dilated(y))


def get_inputs():
    return [torch.randn(1, 4, 8, 8)]


def get_init_inputs():
    return []
'''


def test_max_autotune_is_left_out_where_tuning_would_outlast_the_verification_limit(monkeypatch,
                                                                                   caplog):
    """Each distinct product/convolution shape costs seconds of tuning; where they add up past one
    verification's time limit the attempt could only time out (KernelBench's graphs with 18 to 103
    shapes all did), so ``auto`` does not propose it and says why; ``on`` still does, and a longer
    limit lets it in."""
    from torch_cudal1.engines.builtin import max_autotune
    from torch_cudal1.graph import trace
    real = trace.trace_task
    monkeypatch.setattr(trace, "trace_task", lambda task, device: real(task, "cpu"))
    small, large = CONV_TOWER.format(n=3), CONV_TOWER.format(n=20)
    assert max_autotune.tuned_shapes(real(Task(small), "cpu").gm) == 3
    assert max_autotune.tuned_shapes(real(Task(large), "cpu").gm) == 20

    def origins(src, **opts):
        cands = BuiltinEngine(Options.resolve(opts)).propose(Task(src, name="tower"), [],
                                                             _ctx(1, "cuda"))
        return {c.origin for c in cands if "max-autotune" in c.origin}
    tuned = {"builtin:inductor-max-autotune"}
    assert origins(small) == tuned
    with caplog.at_level("INFO", logger="torch_cudal1"):
        assert origins(large) == set()
    assert "no max-autotune candidates for tower: 20 matrix-product/convolution shapes" in caplog.text
    assert origins(large, max_autotune="on") == tuned
    assert origins(large, verify_timeout_s=20 * max_autotune.SECONDS_PER_SHAPE) == tuned


def test_the_max_autotune_candidate_is_verified_like_any_other():
    (c,) = BuiltinEngine(Options.resolve({"max_autotune": "on"})).propose(Task(PLAIN), [], _ctx())
    assert 'mode="max-autotune-no-cudagraphs"' in c.source
    verdict, timing = evaluate(Task(PLAIN), c, device="cpu", trials=2, time_it=True)
    assert verdict.accepted, verdict
    assert timing is not None and timing.median_ms > 0


RECORDS_PRECISION = '''
import torch
import torch.nn as nn

SEEN = []


class Model(nn.Module):
    def forward(self, a, b):
        SEEN.append(torch.get_float32_matmul_precision())
        if a.shape[0] == 3:
            raise ValueError("odd shape")
        return torch.tanh(a @ b)


def get_inputs():
    return [torch.randn(16, 16), torch.randn(16, 16)]


def get_init_inputs():
    return []
'''


def _tf32_model():
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.engines.builtin import tf32
    from torch_cudal1.task import load_source
    src = tf32.wrap(baseline_candidate(Task(RECORDS_PRECISION), "eager").source)
    mod = load_source(src, "cudal1_test_tf32")
    return mod, mod.ModelNew()


def test_the_tf32_wrapper_allows_tf32_for_its_own_calls_only():
    """Products run under ``float32_matmul_precision("high")`` inside the call; the caller's
    setting is back afterwards, also when the call raises."""
    mod, m = _tf32_model()
    assert torch.get_float32_matmul_precision() == "highest"
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    torch.testing.assert_close(m(a, b), torch.tanh(a @ b))
    assert mod.SEEN == ["high"]
    assert torch.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError):
        m(torch.randn(3, 16), b)
    assert mod.SEEN[-1] == "high"
    assert torch.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("caller", ["medium", "high"])
def test_the_tf32_wrapper_leaves_a_looser_caller_setting_alone(caller):
    mod, m = _tf32_model()
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(caller)
    try:
        m(torch.randn(16, 16), torch.randn(16, 16))
        assert mod.SEEN == [caller]
        assert torch.get_float32_matmul_precision() == caller
    finally:
        torch.set_float32_matmul_precision(old)


BF16_PRODUCT = PLAIN.replace("torch.randn(16, 16), torch.randn(16, 16)",
                             "torch.randn(16, 16, dtype=torch.bfloat16), "
                             "torch.randn(16, 16, dtype=torch.bfloat16)")


def test_tf32_candidates_are_proposed_on_gpus_for_float32_products(monkeypatch):
    """Eager, inductor and max-autotune under TF32 (and the rewritten graph through inductor,
    where a rewrite fired): on a GPU, for graphs with float32 matrix products, where the user's
    float32_matmul_precision allows TF32 or the option opts in, unless switched off."""
    from torch_cudal1.graph import trace
    real = trace.trace_task
    monkeypatch.setattr(trace, "trace_task", lambda task, device: real(task, "cpu"))  # no GPU here

    def origins(src, device="cuda", **opts):
        cands = BuiltinEngine(Options.resolve(opts)).propose(Task(src), [], _ctx(1, device))
        return {c.origin for c in cands if "tf32" in c.origin}
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")   # PyTorch's default: full float32
        assert origins(PLAIN) == set()
        assert "builtin:tf32" in origins(PLAIN, tf32="on")   # the explicit opt-in
        assert Options.resolve({"tf32": "on"}).verify_precision() == "high"
        assert Options.resolve({}).verify_precision() == "highest"
        torch.set_float32_matmul_precision("high")   # the user allows TF32
        _tf32_candidates(origins)
    finally:
        torch.set_float32_matmul_precision(before)


def _tf32_candidates(origins):
    assert origins(PLAIN) == {"builtin:tf32", "builtin:tf32+inductor",
                              "builtin:tf32+inductor-max-autotune"}
    assert origins(PLAIN, max_autotune="off") == {"builtin:tf32", "builtin:tf32+inductor"}
    diag = origins(DIAG)   # nn.Linear's addmm stays after the diagonal rewrite
    assert any(o.startswith("builtin:rewrite(") and o.endswith("+inductor+tf32") for o in diag)
    assert origins(ELEMENTWISE) == set()
    assert origins(ROWWISE) == set()
    assert origins(BF16_PRODUCT) == set()
    assert origins(PLAIN, "cpu") == set()
    assert origins(PLAIN, tf32="off") == set()
    assert "builtin:tf32" in origins(PLAIN, "cpu", tf32="on")


LONG_PRODUCT = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(512, 8192), torch.randn(8192, 512)]


def get_init_inputs():
    return []
'''


@pytest.mark.gpu
def test_tf32_candidates_pass_the_float32_tolerance_on_a_gpu_and_really_use_tf32():
    """A long float32 product in TF32 passes the float32 tolerance; it is really computed in TF32
    (it differs from the full-float32 product by more than float32 rounding), and the process's
    own precision setting is unchanged after the call."""
    from torch_cudal1.task import load_source
    task = Task(LONG_PRODUCT, name="long_product")
    # TF32 is proposed where the user's precision allows it, or on the explicit opt-in, and
    # verified at the precision that allows it
    opts = Options.resolve({"max_autotune": "off", "tf32": "on"})
    assert not any("tf32" in c.origin for c in BuiltinEngine(Options.resolve(
        {"max_autotune": "off"})).propose(task, [], _ctx(1, "cuda")))   # "highest": not proposed
    cands = {c.origin: c for c in BuiltinEngine(opts).propose(task, [], _ctx(1, "cuda"))}
    assert {"builtin:tf32", "builtin:tf32+inductor"} <= set(cands)
    for origin in ("builtin:tf32", "builtin:tf32+inductor"):
        verdict, _ = evaluate(task, cands[origin], device="cuda", precision=opts.verify_precision())
        assert verdict.accepted, (origin, verdict)
    m = load_source(cands["builtin:tf32"].source, "cudal1_test_tf32_gpu").ModelNew().cuda()
    a, b = torch.randn(512, 8192, device="cuda"), torch.randn(8192, 512, device="cuda")
    exact = (a.double() @ b.double())
    err_tf32 = ((m(a, b).double() - exact).norm() / exact.norm()).item()
    err_fp32 = (((a @ b).double() - exact).norm() / exact.norm()).item()
    assert torch.get_float32_matmul_precision() == "highest"
    assert err_tf32 > 20 * err_fp32, (err_tf32, err_fp32)
    assert err_tf32 < 1e-3


CONV = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []
'''


def test_cudnn_benchmark_candidates_are_proposed_on_gpus_for_convolutions(monkeypatch):
    """Eager and inductor with cuDNN's autotuning: on a GPU, for graphs with convolutions,
    unless switched off or the caller has it on already."""
    from torch_cudal1.graph import trace
    real = trace.trace_task
    monkeypatch.setattr(trace, "trace_task", lambda task, device: real(task, "cpu"))  # no GPU here

    def origins(src, device="cuda", **opts):
        cands = BuiltinEngine(Options.resolve(opts)).propose(Task(src), [], _ctx(1, device))
        return {c.origin for c in cands if c.origin.startswith("builtin:cudnn")}
    assert origins(CONV) == {"builtin:cudnn-benchmark", "builtin:cudnn-benchmark+inductor"}
    assert origins(PLAIN) == set()
    assert origins(CONV, "cpu") == set()
    assert origins(CONV, cudnn_benchmark="off") == set()
    assert "builtin:cudnn-benchmark" in origins(CONV, "cpu", cudnn_benchmark="on")
    old = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        assert origins(CONV) == set()
    finally:
        torch.backends.cudnn.benchmark = old


def test_the_cudnn_benchmark_wrapper_switches_it_for_its_own_calls_only():
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.engines.builtin import cudnn_benchmark
    from torch_cudal1.task import load_source
    src = RECORDS_PRECISION.replace("torch.get_float32_matmul_precision()",
                                    "torch.backends.cudnn.benchmark")
    mod = load_source(cudnn_benchmark.wrap(baseline_candidate(Task(src), "eager").source),
                      "cudal1_test_cudnn_benchmark")
    m = mod.ModelNew()
    assert torch.backends.cudnn.benchmark is False
    m(torch.randn(16, 16), torch.randn(16, 16))
    with pytest.raises(ValueError):
        m(torch.randn(3, 16), torch.randn(16, 16))
    assert mod.SEEN == [True, True]
    assert torch.backends.cudnn.benchmark is False


@pytest.mark.parametrize("option,task,origin", [
    ("tf32", "PLAIN", "builtin:tf32+inductor"),
    ("cudnn_benchmark", "CONV", "builtin:cudnn-benchmark+inductor"),
    ("channels_last", "CONV", "builtin:channels-last")])
def test_a_switched_candidate_is_verified_like_any_other(option, task, origin):
    """The TF32 and cuDNN-autotuning candidates through the verifier (on CPU: their switches
    change nothing there, but they must be put back after every call, or ``global_state``)."""
    src = globals()[task]
    cands = BuiltinEngine(Options.resolve({option: "on", "max_autotune": "off"})).propose(
        Task(src), [], _ctx())
    (c,) = [c for c in cands if c.origin == origin]
    verdict, timing = evaluate(Task(src), c, device="cpu", trials=2, time_it=True)
    assert verdict.accepted, verdict
    assert timing is not None and timing.median_ms > 0


def test_channels_last_candidates_are_proposed_on_gpus_for_2d_and_3d_convolutions(monkeypatch):
    from torch_cudal1.graph import trace
    real = trace.trace_task
    monkeypatch.setattr(trace, "trace_task", lambda task, device: real(task, "cpu"))  # no GPU here

    def origins(src, device="cuda", **opts):
        cands = BuiltinEngine(Options.resolve(opts)).propose(Task(src), [], _ctx(1, device))
        return {c.origin for c in cands if "channels-last" in c.origin}
    both = {"builtin:channels-last", "builtin:channels-last+cudnn-benchmark"}
    assert origins(CONV) == both
    assert origins(CONV3D) == both
    assert origins(CONV, cudnn_benchmark="off") == {"builtin:channels-last"}
    assert origins(CONV1D) == set()    # 3-D tensors: no channels-last layout
    assert origins(PLAIN) == set()
    assert origins(CONV, "cpu") == set()
    assert origins(CONV, channels_last="off") == set()
    assert origins(CONV, "cpu", channels_last="on") == {"builtin:channels-last"}


CONV3D = CONV.replace("nn.Conv2d(3, 8, 3, padding=1)", "nn.Conv3d(3, 8, 3, padding=1)").replace(
    "torch.randn(2, 3, 16, 16)", "torch.randn(2, 3, 6, 8, 8)")
CONV1D = CONV.replace("nn.Conv2d(3, 8, 3, padding=1)", "nn.Conv1d(3, 8, 3, padding=1)").replace(
    "torch.randn(2, 3, 16, 16)", "torch.randn(2, 3, 16)")
CONV_WEIGHT_INPUT = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """The weight handed in as an input, as Dynamo's graphs take lifted parameters."""
    def forward(self, x, w):
        Model.SEEN.append((x.is_contiguous(memory_format=torch.channels_last),
                           w.is_contiguous(memory_format=torch.channels_last)))
        return torch.nn.functional.conv2d(x, w, padding=1).relu()


Model.SEEN = []


def get_inputs():
    return [torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("src,fmt", [("CONV", torch.channels_last),
                                     ("CONV3D", torch.channels_last_3d)])
def test_the_channels_last_wrapper_converts_module_and_inputs_and_returns_contiguous(src, fmt):
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.engines.builtin import channels_last
    from torch_cudal1.task import load_source
    task = Task(globals()[src])
    mod = load_source(channels_last.wrap(baseline_candidate(task, "eager").source),
                      "cudal1_test_channels_last_" + src)
    torch.manual_seed(0)
    ref = mod.Model()
    torch.manual_seed(0)
    new = mod.ModelNew()
    assert new.inner.conv.weight.is_contiguous(memory_format=fmt)
    assert not ref.conv.weight.is_contiguous(memory_format=fmt)
    seen = []
    new.inner.conv.register_forward_pre_hook(lambda m, a: seen.append(
        a[0].is_contiguous(memory_format=fmt)))
    (x,) = mod.get_inputs()
    with torch.no_grad():
        out, expected = new(x), ref(x)
    assert seen == [True]
    assert out.is_contiguous() and out.stride() == expected.stride()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_weights_handed_in_as_inputs_are_converted_on_every_call():
    """Dynamo's graphs take parameters as inputs: they reach the convolution channels-last too,
    and a weight changed in place between calls is read as it is now, never from an earlier
    copy."""
    from torch_cudal1.engines.baselines import baseline_candidate
    from torch_cudal1.engines.builtin import channels_last
    from torch_cudal1.task import load_source
    mod = load_source(channels_last.wrap(baseline_candidate(Task(CONV_WEIGHT_INPUT), "eager").source),
                      "cudal1_test_channels_last_weight_input")
    new, ref = mod.ModelNew(), mod.Model()
    x, w = mod.get_inputs()
    with torch.no_grad():
        for scale in (1.0, 2.0, -3.0):
            w.mul_(scale)
            torch.testing.assert_close(new(x, w), ref(x, w), rtol=1e-4, atol=1e-5)
    assert mod.Model.SEEN[::2] == [(True, True)] * 3   # the wrapper's calls (the reference's between)


@pytest.mark.gpu
def test_channels_last_candidates_verify_on_gpu():
    """On CUDA, where cuDNN takes its channels-last kernels: accepted, 2-D and 3-D."""
    for src in (CONV, CONV3D):
        task = Task(src.replace("torch.randn(2, 3,", "torch.randn(8, 3,"), name="conv")
        cands = [c for c in BuiltinEngine(Options.resolve({"max_autotune": "off"})).propose(
            task, [], _ctx(1, "cuda")) if "channels-last" in c.origin]
        assert {c.origin for c in cands} == {"builtin:channels-last",
                                             "builtin:channels-last+cudnn-benchmark"}
        for c in cands:
            verdict, timing = evaluate(task, c, device="cuda", time_it=True)
            assert verdict.accepted, (c.origin, verdict)
            assert timing is not None and timing.median_ms > 0


@pytest.mark.gpu
def test_cudnn_benchmark_candidates_verify_on_gpu():
    """On CUDA, with the real cuDNN autotuning: accepted (same convolution, other algorithms),
    and not refused ``global_state`` (the switch is back after every call)."""
    task = Task(CONV.replace("torch.randn(2, 3, 16, 16)", "torch.randn(8, 3, 64, 64)"), name="conv")
    cands = [c for c in BuiltinEngine(Options.resolve({"max_autotune": "off"})).propose(
        task, [], _ctx(1, "cuda")) if c.origin.startswith("builtin:cudnn")]
    assert {c.origin for c in cands} == {"builtin:cudnn-benchmark",
                                         "builtin:cudnn-benchmark+inductor"}
    for c in cands:
        verdict, timing = evaluate(task, c, device="cuda", time_it=True)
        assert verdict.accepted, (c.origin, verdict)
    assert torch.backends.cudnn.benchmark is False
