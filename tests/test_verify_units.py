"""In-process unit tests of the verifier's parts: comparison, static filter, build-log trimming,
guards, timing. No child processes."""
import os
import time

import pytest
import torch

from torch_cudal1.bench.timing import CheckFailed, quartiles, time_callable
from torch_cudal1.harness import guards
from torch_cudal1.verify.compare import check_real_tensor, compare
from torch_cudal1.harness.errors import classify_exception, classify_reported, trim_build_log
from torch_cudal1.verify.static import check_source


def _hi(x):
    return x.double()


def test_compare_accepts_rounding_and_rejects_bf16():
    a, b = torch.randn(256, 512), torch.randn(512, 128)
    hi = a.double() @ b.double()
    native = a @ b
    assert compare(native, native, hi)[0] == "ok"
    bf16 = (a.bfloat16() @ b.bfloat16()).float()
    reason, detail, stats = compare(native, bf16, hi)
    assert reason == "mismatch" and stats["rel_error"] > 1e-3


def test_zero_or_constant_answer_cannot_hide_under_tolerance():
    x = torch.randn(64, 64) * 1e-4          # tiny values: an absolute atol would accept zeros
    assert compare(x, torch.zeros_like(x), _hi(x))[0] == "mismatch"
    y = torch.relu(torch.randn(64, 64)) + 1.0
    assert compare(y, torch.ones_like(y), _hi(y))[0] == "mismatch"


def test_exact_constant_shortcut_passes_and_near_zero_does_not():
    x = torch.randn(8, 8)
    ref = x - x
    assert compare(ref, torch.zeros_like(x), _hi(ref))[0] == "ok"
    assert compare(ref, torch.full_like(x, 1e-6), _hi(ref))[0] == "mismatch"


def test_structure_dtype_shape_nan_and_stride_option():
    r = torch.randn(4, 6)
    assert compare(r, r.double(), _hi(r))[0] == "dtype"
    assert compare(r, r.flatten(), _hi(r))[0] == "shape"
    assert compare((r, r), (r,), None)[0] == "shape"
    bad = r.clone()
    bad[1, 2] = float("inf")
    assert compare(r, bad, _hi(r))[0] == "nan"
    t = r.t()
    assert compare(t, t.contiguous(), _hi(t))[0] == "ok"                     # default: values only
    assert compare(t, t.contiguous(), _hi(t), check_stride=True)[0] == "stride"
    assert compare(3, 3)[0] == "ok" and compare(3, 4)[0] == "mismatch"


def test_integer_outputs_exact_with_near_tie_allowance():
    idx = torch.tensor([0, 1, 2, 3])
    assert compare(idx, idx.clone(), idx)[0] == "ok"
    assert compare(idx, torch.tensor([0, 1, 2, 0]), idx)[0] == "mismatch"
    hi = torch.tensor([0, 1, 2, 0])      # the float64 reference flips one near-tie
    assert compare(idx, torch.tensor([0, 1, 1, 3]), hi)[0] == "ok"


def _verdicts_in_pieces(monkeypatch, checker=None):
    """compare()'s verdicts on large-output cases, whole and in pieces of 1000 elements."""
    from torch_cudal1.verify import compare as cmp_mod
    g = torch.Generator().manual_seed(0)
    hi = torch.randn(64, 100, generator=g, dtype=torch.float64) * 3
    ref = hi.float()
    honest = (hi + 1e-6 * torch.randn(64, 100, generator=g, dtype=torch.float64)).float()
    one_off = honest.clone()
    one_off[50, 7] += 0.5                          # one element, in a late piece
    nan_late = honest.clone()
    nan_late[63, 99] = float("nan")
    # Small values first, large ones after: an error of 0.5 among the small ones is within the
    # element bound set by the whole output's rms (~70), not by that piece's own (~0.001).
    scaled_hi = torch.cat([hi[:32] * 1e-3, hi[32:] * 30])
    scaled_off = scaled_hi.float()
    scaled_off[3, 3] += 0.5
    cases = {"honest": (ref, honest, hi), "one element off": (ref, one_off, hi),
             "off by less than the rms": (scaled_hi.float(), scaled_off, scaled_hi),
             "nan in the last piece": (ref, nan_late, hi),
             "transposed views": (ref.t(), honest.t(), hi.t()),
             "mixed layouts": (ref.t().contiguous(), one_off.t(), hi.t())}
    out = {}
    for size in (None, 1000):
        if size:
            monkeypatch.setattr(cmp_mod, "PIECE", size)
        for name, (r, n, h) in cases.items():
            reason, detail, stats = compare(r, n, h, checker=checker)
            out.setdefault(name, []).append((reason, detail, round(stats.get("rel_error", 0), 9)))
    return out


def test_large_outputs_are_compared_in_pieces_with_the_same_verdicts(monkeypatch):
    """Outputs of billions of elements are compared a piece at a time (float64 copies of a whole
    8.6 GB output do not fit beside it); the verdict, the count of elements out of tolerance and
    the error must be those of the comparison in one piece."""
    got = _verdicts_in_pieces(monkeypatch)
    assert [v[0][0] for v in got.values()] == ["ok", "mismatch", "ok", "nan", "ok", "mismatch"]
    assert "1 of 6400 elements out of tolerance" in got["one element off"][0][1]
    for name, (whole, pieced) in got.items():
        assert whole == pieced, name


def test_real_tensor_check():
    class Sub(torch.Tensor):
        pass
    assert check_real_tensor(torch.ones(3).as_subclass(Sub), 0)[0] == "lazy_output"
    assert check_real_tensor(torch.empty(3, device="meta"), 0)[0] == "lazy_output"
    assert check_real_tensor(torch.ones(3), 0) is None
    assert check_real_tensor(torch.ones(0), 0) is None


@pytest.mark.parametrize("src", [
    "import subprocess",
    "import os\nos.system('ls')",
    "from os import system\nsystem('ls')",
    "import os as o\no.fork()",
    "import socket",
    "import ctypes\nctypes.CDLL('libc.so.6')",
    "import ctypes\nctypes.cdll.LoadLibrary(None)",
    "open('/etc/x', 'w')",
    "open(path, 'wb')",
    "exec('print(1)')",
    "import sys\nsys._getframe(1)",
    "import inspect\ninspect.currentframe().f_back",
    # memory at a raw address, an object from its address: no audit event names these
    "import ctypes\np = ctypes.cast(a, ctypes.POINTER(ctypes.c_float))",
    "import ctypes as c\nclass U(c.Union):\n    pass",
    "from ctypes import cast",
    "from ctypes import *",
    "import _ctypes",
    "import torch\ntorch.ctypes.memmove(a, b, 4)",
    "import ctypes\nctypes.c_char_p(addr).value",
    "from ctypes import c_char_p\nc_char_p(addr)",
    "import ctypes\nx = ctypes.c_float.from_address(addr)",
    "import ctypes\nf = getattr(ctypes, 'py_object')",
    "import ctypes\nf = getattr(ctypes, name)",
    "t = object.__subclasses__()",
    "cell = f.__closure__[0]",
    "v = vars(type(f))['__globals__']",
    "class A:\n    __array_interface__ = {'data': (addr, False)}",
])
def test_static_filter_rejects(src):
    reason, detail = check_source(src)
    assert reason == "forbidden_call" and "line" in detail


def test_static_filter_passes_kernelbench_style_code():
    src = '''
import os, ctypes, torch
from torch.utils.cpp_extension import load_inline
os.environ["TORCH_CUDA_VERBOSE"] = "0"
with open("fused_conv_extension.cpp", "w") as f:
    f.write("...")
ptr = ctypes.c_void_p()
ctypes.byref(ptr), ctypes.c_char_p(b"c_weight"), ctypes.sizeof(ctypes.c_float)
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.compile(lambda y: y)(x).eval() if False else x
'''
    assert check_source(src) == ("ok", "")
    assert check_source("def f(:\n")[0] == "build_error"


def test_trim_build_log_keeps_first_diagnostics():
    log = "\n".join(["[1/2] c++ -MMD -isystem /x -c a.cpp -o a.o", "FAILED: a.o"]
                    + [f"note: include chain {i}" for i in range(50)]
                    + ["a.cpp:3:5: error: 'foo' was not declared in this scope", "    foo(1);",
                       "a.cpp:9:1: error: expected ';'", "ninja: build stopped: subcommand failed."])
    out = trim_build_log(log)
    assert out.splitlines()[0].startswith("a.cpp:3:5: error")
    assert "foo(1);" in out and "expected ';'" in out and "-isystem" not in out


def test_classify_exception():
    assert classify_exception(MemoryError())[0] == "memory"
    assert classify_exception(RuntimeError("CUDA out of memory. Tried"))[0] == "memory"
    e = RuntimeError("Error building extension 'x': a.cu(3): error: identifier bad")
    reason, detail = classify_exception(e)
    assert reason == "build_error" and "a.cu(3): error" in detail
    assert classify_exception(ValueError("boom"))[0] == "crash"
    # cudagraph trees' static outputs, overwritten by the next replay while the caller holds them
    e = RuntimeError("Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
                     "subsequent run. Stack trace: ...")
    assert classify_exception(e)[0] == "output_aliased"


def test_guards_see_replacements():
    snap = guards.snapshot()
    assert guards.changed(snap) == []
    real = time.perf_counter
    try:
        time.perf_counter = lambda: 0.0
        assert "time.perf_counter" in guards.changed(snap)
    finally:
        time.perf_counter = real
    real_m = torch.Tensor.clone
    try:
        torch.Tensor.clone = lambda self: self
        assert "torch.Tensor.clone" in guards.changed(snap)
    finally:
        torch.Tensor.clone = real_m
    assert guards.changed(snap) == []


def test_guards_see_what_any_model_reaches():
    """Rebinding what models call through (torch's functional namespaces, a module class's
    forward, a loaded ATen overload) changes every model of the serving process: the worker's
    snapshot sees it."""
    torch.ops.aten.mm.default(torch.randn(2, 2), torch.randn(2, 2))   # loaded before the snapshot
    snap = guards.snapshot()
    assert guards.changed(snap) == []
    for owner, name, fake in [(torch.nn.functional, "gelu", lambda x: x),
                              (torch, "diag", lambda x: x),
                              (torch.nn.Linear, "forward", lambda self, x: x),
                              (torch.ops.aten.mm, "default", lambda a, b: a)]:
        real = vars(owner)[name]
        try:
            setattr(owner, name, fake)
            assert guards.changed(snap), (owner, name)
        finally:
            setattr(owner, name, real)
    assert guards.changed(snap) == []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: None)
    try:
        assert any("_global_forward_pre_hooks" in k for k in guards.changed(snap))
    finally:
        hook.remove()


def test_classify_reported_matches_classify_exception():
    """The judge classifies what the worker reports (type name and text) as it would the
    exception itself."""
    for e in (MemoryError(), RuntimeError("CUDA out of memory. Tried"), ValueError("boom"),
              RuntimeError("Error building extension 'x': a.cu(3): error: identifier bad")):
        from torch_cudal1.harness.errors import chain_text
        assert classify_reported(type(e).__name__, chain_text(e))[0] == classify_exception(e)[0]


def test_quartiles():
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (3.0, 2.0)
    assert quartiles([2.0]) == (2.0, 0.0)


def test_time_callable_cpu_and_checks_during_timing():
    sets = [[torch.randn(64, 64)] for _ in range(3)]
    t = time_callable(lambda x: x @ x, sets, "cpu", budget_s=0.3)
    assert t.method == "cpu_perf_counter" and t.n >= 10 and t.median_ms > 0
    assert t.spread_ms >= 0 and t.extra["input_sets"] == 3

    calls = []

    def check(idx, out):
        calls.append(idx)
        if len(calls) == 2:
            raise CheckFailed("stale_output", "second check")
    with pytest.raises(CheckFailed):
        time_callable(lambda x: x + 1, sets, "cpu", budget_s=0.3, check=check)


def test_a_call_after_each_check_is_not_timed():
    """A check runs the reference, which evicts the candidate's working set (allocator cache,
    CPU caches): the call after it is a warm-up again, so no sample pays for the check."""
    sets = [[torch.randn(8)] for _ in range(3)]
    calls, checked = [], []

    def fn(x):
        calls.append(1)
        return x + 1
    t = time_callable(fn, sets, "cpu", warmup=3, budget_s=0.2,
                      check=lambda i, out: checked.append(i), n_checks=3)
    assert len(checked) == 3 == t.extra["checks"]
    assert len(calls) == 3 + t.n + len(checked)


def test_references_are_kept_while_they_fit_else_recomputed_from_the_buffers(monkeypatch):
    from torch_cudal1.verify.references import References
    bufs = [torch.ones(4)]
    calls = []

    def answer(k):
        calls.append(k)
        return bufs[k] * 2, (bufs[k] * 2).double()
    out = torch.zeros(4)
    monkeypatch.setenv("CUDAL1_VERIFY_KEEP_BYTES", str(3 * (16 + 32 + 2 * 16)))
    kept = References(answer, "cpu")
    assert kept.fit(3, answer(0), out) and kept.snapshot_home(out) is out
    kept.append(answer(0))
    bufs[0].fill_(5)
    assert kept[0][0].tolist() == [2.0] * 4 and kept.kept(0) is not None and len(calls) == 2
    monkeypatch.setenv("CUDAL1_VERIFY_KEEP_BYTES", str(3 * (16 + 32 + 2 * 16) - 1))
    lazy = References(answer, "cpu")
    assert not lazy.fit(3, answer(0), out)
    lazy.append(answer(0))
    # recomputed from what the buffers hold now; nothing kept to tell the old contents by
    assert lazy[0][0].tolist() == [10.0] * 4 and lazy[-1][1].dtype == torch.float64
    assert lazy.kept(0) is None and len(lazy) == 1 and len(list(lazy)) == 1
    assert isinstance(lazy.snapshot_home(out), list)


def test_output_slots_hold_the_verifications_batches_however_large_the_outputs():
    """Outputs of gigabytes (a 3-D convolution's) on any host: the worker's shared memory still
    holds every draw and the repeat of the first, and a timed batch (an honest candidate was
    once rejected as a crash writing past the last slot)."""
    from torch_cudal1.verify.judge import MAX_BATCH, MIN_TIMED_BATCH, slot_count
    gib = 1 << 30
    assert slot_count(int(2.6 * gib), 128 * gib, draws=3) >= 4
    assert slot_count(int(2.6 * gib), 8 * gib, draws=5) >= 6
    assert slot_count(10 * gib, 8 * gib, draws=1) >= MIN_TIMED_BATCH
    assert slot_count(4096, 128 * gib, draws=3) == MAX_BATCH


def test_convolutions_under_cudnn_tf32_are_compared_at_tf32_bounds(monkeypatch):
    """At "highest", a reference that runs a float32 convolution on a GPU where the user lets
    cuDNN use TF32 (PyTorch's default) is compared at "high"'s bounds; without a convolution,
    off the GPU, or with cuDNN's TF32 off, the user's precision stands."""
    from torch_cudal1.verify import cudnn_tf32
    conv = torch.nn.Conv2d(3, 4, 3)
    out, seen = cudnn_tf32.run_noting(conv, torch.randn(1, 3, 8, 8))
    assert seen and out.shape == (1, 4, 6, 6)
    _, seen = cudnn_tf32.run_noting(lambda x: x @ x, torch.randn(4, 4))
    assert not seen
    _, seen = cudnn_tf32.run_noting(conv.double(), torch.randn(1, 3, 8, 8, dtype=torch.float64))
    assert not seen   # float64 convolutions have no TF32

    def broken(x):   # code a dispatch mode breaks is called again plainly
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        if _get_current_dispatch_mode() is not None:
            raise RuntimeError("not under a mode")
        return x + 1
    out, seen = cudnn_tf32.run_noting(broken, torch.zeros(2))
    assert not seen and out.tolist() == [1.0, 1.0]

    assert cudnn_tf32.compare_precision("highest", "cpu", True) == "highest"
    monkeypatch.setattr(cudnn_tf32, "allowed", lambda device: True)
    assert cudnn_tf32.compare_precision("highest", "cuda", True) == "high"
    assert cudnn_tf32.compare_precision("highest", "cuda", False) == "highest"
    assert cudnn_tf32.compare_precision("medium", "cuda", True) == "medium"
    monkeypatch.setattr(cudnn_tf32, "allowed", lambda device: False)
    assert cudnn_tf32.compare_precision("highest", "cuda", True) == "highest"


def test_cudnn_tf32_follows_the_users_switch(monkeypatch):
    from torch_cudal1.verify import cudnn_tf32
    assert not cudnn_tf32.allowed("cpu")
    before = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = True
        assert cudnn_tf32.allowed("cuda")
        torch.backends.cudnn.allow_tf32 = False
        assert not cudnn_tf32.allowed("cuda")
    finally:
        torch.backends.cudnn.allow_tf32 = before


def test_input_fingerprint_sees_values_moved():
    """A call that sorts its input in place keeps the plain sum of the input's words; the
    fingerprint the harness takes of inputs changes, the same on the CPU and through torch."""
    from torch_cudal1.harness.calls import _fp_numpy, _fp_torch, fingerprint, placed_fingerprint
    for x in (torch.randn(64, 512, dtype=torch.float64), torch.randn(3, 5000),
              torch.randint(-100, 100, (7, 13, 5), dtype=torch.int8), torch.randn(3)):
        moved = x.clone()
        moved.view(-1).copy_(moved.view(-1).flip(0)) if x.dim() == 1 else \
            moved.copy_(moved.sort(dim=-1).values)
        if x.element_size() == 8:   # 8-byte values moved: what a plain sum of words misses
            assert fingerprint(moved) == fingerprint(x)
        assert placed_fingerprint(moved) != placed_fingerprint(x)
        assert placed_fingerprint(x.clone()) == placed_fingerprint(x)
        b = x.reshape(-1).view(torch.uint8)
        assert _fp_numpy(b) == _fp_torch(b)


@pytest.mark.parametrize("outputs", [1, 4])
def test_runner_holds_its_first_outputs_to_the_end(outputs):
    """A ring of output buffers that comes round once in the whole run, after more batches than
    the last HELD_OUTPUTS: the outputs held from the first batches show it, however many
    outputs a call has (calls are held, not tensors)."""
    import types
    from torch_cudal1.harness.calls import HELD_OUTPUTS, Inputs, Runner, Slots, memfd, output_specs
    from torch_cudal1.harness.protocol import layout

    class Ring(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.bufs = [[torch.empty(8) for _ in range(outputs)] for _ in range(n)]
            self.i = 0

        def forward(self, x):
            outs = self.bufs[self.i % len(self.bufs)]
            self.i += 1
            return tuple(torch.mul(x, k + 2.0, out=o) for k, o in enumerate(outs))

    task = types.SimpleNamespace(get_inputs=lambda: [torch.randn(8)])
    specs = output_specs(tuple(torch.zeros(8) for _ in range(outputs)))
    fd = memfd(4 * layout(specs)[1])
    per_batch = 4

    def run(ring: int) -> list:
        runner = Runner(Ring(ring), Inputs(task, "cpu"), Slots(fd, 4, specs, "cpu"), "cpu")
        found = []
        for b in range(3 * HELD_OUTPUTS):
            calls = [{"seed": 100 * b + k} for k in range(per_batch)]
            calls[0]["hold"] = True
            reply = runner.run(calls)
            assert reply["error"] is None
            found.append(reply.get("held_changed"))
        return found

    ring = per_batch * (HELD_OUTPUTS + 2)   # round once, after the last held ones have moved on
    seen = run(ring)
    assert any(seen) and "held" in next(s for s in seen if s)
    assert not any(run(10 ** 3))            # fresh buffers for the whole run: nothing to see
    os.close(fd)


def test_input_watch_sees_every_change_a_call_can_make_to_its_inputs():
    """Bytes compared exactly, not summed: a sign flip (2^63 added to a float64's word) and a
    write between a view's rows show, as do other memory given to an input (``set_``) and a
    list appended to; a skipped input (one the reference writes) and memory it shares with
    another are left to the comparison of its values."""
    from torch_cudal1.harness.calls import InputWatch
    base = torch.randn(64, 256, dtype=torch.float64)
    x = base[:, :128]
    xs = [x, [torch.randn(10), torch.randn(3)], 5]
    assert InputWatch(xs).changed(xs) == []
    w = InputWatch(xs)
    x.neg_()
    assert w.changed(xs) == [0]
    w = InputWatch(xs)
    base[:, 200] = 1.0
    assert w.changed(xs) == [0]
    w = InputWatch(xs)
    xs[1][0].set_(torch.randn(10))
    assert w.changed(xs) == [1]
    w = InputWatch(xs)
    xs[1].append(torch.ones(2))
    assert w.changed(xs) == [1]
    w = InputWatch(xs, skip=[1])
    xs[1].append(torch.ones(2))
    xs[1][0].add_(1.0)
    assert w.changed(xs) == []
    t = torch.randn(8)
    both = [t, t]
    w = InputWatch(both, skip=[0])
    t.relu_()
    assert w.changed(both) == []


def test_widen_scales_floating_inputs_only_and_never_into_infinity():
    from torch_cudal1.harness.calls import widen
    x, idx = torch.randn(4, 5), torch.arange(6)
    mask = torch.full((3,), torch.finfo(torch.float32).min)
    pair = [torch.randn(2, dtype=torch.float64), torch.randn(3, dtype=torch.bfloat16)]
    before = [x.clone(), idx.clone(), mask.clone(), [p.clone() for p in pair]]
    assert widen([x, idx, mask, pair, 3.0], 64.0) == 3
    assert torch.equal(x, before[0] * 64) and torch.equal(idx, before[1])
    assert torch.equal(mask, before[2])   # 64 times finfo.min is -inf: left as it was
    assert all(torch.equal(p, q * 64) for p, q in zip(pair, before[3]))


def test_reference_holds_where_float32_is_as_right_as_it_can_be():
    """Held against float64 rounded to float32: a stable softmax holds, and so does exp, whose
    inf is the float32 answer where float64's is past float32's range; a softmax without its
    maximum subtracted, NaN where the truth is finite, does not."""
    from torch_cudal1.verify.compare import reference_holds
    x = torch.randn(16, 64) * 64
    assert reference_holds(torch.softmax(x, -1), torch.softmax(x.double(), -1))[0] == "ok"
    assert reference_holds(torch.exp(x), torch.exp(x.double()))[0] == "ok"
    naive = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
    assert reference_holds(naive, torch.softmax(x.double(), -1))[0] != "ok"


def test_widen_scales_each_memory_once_however_many_inputs_view_it():
    from torch_cudal1.harness.calls import widen
    base = torch.randn(1, 8)
    mask, t = base.clone().expand(4, 8), torch.randn(3, 3)
    before_mask, before_t = mask.clone(), t.clone()
    assert widen([mask, t, t, t[1:]], 64.0) == 2
    assert torch.equal(mask, before_mask * 64) and torch.equal(t, before_t * 64)


def test_the_harness_runs_on_modules_and_builtins_as_they_were_before_the_import():
    """A module function or builtin swapped after the harness was sealed changes nothing its
    copies run; a method set on a class it calls methods of shows in ``classes_changed``."""
    import builtins

    import numpy
    from torch_cudal1.harness import calls
    ns = calls.sealed()
    state = guards.class_state()
    real_copyto, real_len = numpy.copyto, builtins.len
    numpy.copyto, builtins.len = (lambda *a, **k: None), (lambda x: 0)
    try:
        assert ns["np"].copyto is real_copyto and ns["__builtins__"]["len"] is real_len
        dst, src = torch.zeros(4), torch.arange(4.0)
        ns["np"].copyto(dst.numpy(), src.numpy())
        assert torch.equal(dst, src)
    finally:
        numpy.copyto, builtins.len = real_copyto, real_len
    assert guards.classes_changed(state) == []
    torch.Tensor.copy_ = lambda self, src, non_blocking=False: self   # shadows TensorBase's
    try:
        assert guards.classes_changed(state) == ["torch.Tensor"]
    finally:
        del torch.Tensor.copy_
    assert guards.classes_changed(state) == []
