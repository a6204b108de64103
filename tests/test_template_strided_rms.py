"""The strided RMS-norm template (``templates/channel_norm.py``) and its rewrite
(``rewrites/strided_rms.py``): the Triton kernel agrees with ATen under Triton's interpreter (a
child process: the interpreter is chosen when the kernel is defined), the rewrite fires only on
the exact pattern where it applies, and a rewritten candidate computes the model's output."""
import pytest
import torch

from helpers import run_python
from torch_cudal1.graph.trace import render_candidate_source, trace_task
from torch_cudal1.rewrites import KERNEL_CHOICE, apply_rewrites, strided_rms
from torch_cudal1.task import Task
from torch_cudal1.templates import channel_norm

pytest.importorskip("triton")
INTERPRET = {"TRITON_INTERPRET": "1"}


def test_the_kernel_agrees_with_aten_over_any_non_inner_dimension():
    """Channel counts that are not a multiple of the loaded rows, a ragged last strip, bf16,
    the outermost and a middle dimension."""
    out = run_python("""
        import json, torch
        from torch_cudal1.templates import channel_norm as m
        torch.manual_seed(0)
        errs = []
        for shape, dim, dt in [((2, 64, 20, 30), 1, torch.float32), ((3, 13, 300), 1, torch.float32),
                               ((2, 5, 7, 100), 2, torch.bfloat16), ((4, 3, 2, 257), 0, torch.float32)]:
            x = (torch.randn(*shape) * 3 + 1).to(dt)
            y = torch.ops.cudal1.strided_rms_norm(x, dim, 1e-5)
            ref = m.reference(x.double(), dim, 1e-5)
            assert y.dtype == x.dtype and y.shape == x.shape
            errs.append(((y.double() - ref).norm() / ref.norm()).item())
        print(json.dumps({"errs": errs}))
    """, env=INTERPRET)
    e = out["errs"]
    assert e[0] < 1e-6 and e[1] < 1e-6 and e[2] < 1e-2 and e[3] < 1e-6, e


def test_off_the_gpu_the_op_is_the_formula_in_aten():
    x = torch.randn(2, 8, 4, 4)
    torch.testing.assert_close(torch.ops.cudal1.strided_rms_norm(x, 1, 1e-5),
                               x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5))


def _task(forward: str, shape=(2, 16, 256, 128)) -> Task:
    return Task(name="rms", source=(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n        {forward}\n\n\n"
        f"def get_inputs():\n    return [torch.randn{shape}]\n\n\n"
        "def get_init_inputs():\n    return []\n"))


RMS_DIV = "return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)"
RMS_RSQRT = "return torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * x"


@pytest.mark.parametrize("forward", [RMS_DIV, RMS_RSQRT])
def test_the_rewrite_fires_on_a_gpu_graphs_strided_rms_norm(forward, monkeypatch):
    assert "strided_rms_norm" in KERNEL_CHOICE
    task = _task(forward)
    assert "strided_rms_norm" not in apply_rewrites(trace_task(task, "cpu").gm).fired   # not a GPU graph
    monkeypatch.setattr(strided_rms, "DEVICES", ("cuda", "cpu"))   # as if traced on a GPU
    res = apply_rewrites(trace_task(task, "cpu").gm)
    assert res.fired == ["strided_rms_norm"]
    targets = [str(n.target) for n in res.gm.graph.nodes if n.op == "call_function"]
    assert targets == ["cudal1.strided_rms_norm.default"], targets


@pytest.mark.parametrize("forward,shape", [
    # over the innermost dim: generated code already reads each row once
    ("return x / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5)", (2, 16, 256, 128)),
    # the statistic is used again: it is not an intermediate the template may drop
    ("r = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)\n        return x / r, r",
     (2, 16, 256, 128)),
    # not the square of the normalised tensor
    ("return x / torch.sqrt(torch.mean(x ** 3, dim=1, keepdim=True) + 1e-5)", (2, 16, 256, 128)),
    # too small to be anything but launch-bound
    (RMS_DIV, (2, 16, 32, 32)),
])
def test_the_rewrite_leaves_other_graphs_alone(forward, shape, monkeypatch):
    monkeypatch.setattr(strided_rms, "DEVICES", ("cuda", "cpu"))
    assert "strided_rms_norm" not in apply_rewrites(trace_task(_task(forward, shape), "cpu").gm).fired


def test_a_rewritten_candidate_matches_the_model_and_the_verifier_accepts_it(monkeypatch, tmp_path):
    """Its source, run in a fresh interpreter (Triton's interpreter standing in for the GPU),
    registers the op itself; and the verifier accepts it."""
    from torch_cudal1.contracts import Candidate
    from torch_cudal1.verify import evaluate
    monkeypatch.setattr(strided_rms, "DEVICES", ("cuda", "cpu"))
    task = _task(RMS_DIV)
    traced = trace_task(task, "cpu")
    src = render_candidate_source(task, traced, apply_rewrites(traced.gm).gm)
    assert "import torch_cudal1.templates" in src and "strided_rms_norm" in src
    path = tmp_path / "cand.py"
    path.write_text(src)
    out = run_python(f"""
        import importlib.util, json, torch
        spec = importlib.util.spec_from_file_location("cand", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        torch.manual_seed(0)
        x = m.get_inputs()[0] * 2 + 1
        with torch.no_grad():
            err = (m.ModelNew()(x) - m.Model()(x)).abs().max().item()
        print(json.dumps({{"err": err}}))
    """, env=INTERPRET)
    assert out["err"] < 1e-5
    verdict, _ = evaluate(task, Candidate(src, origin="builtin:rewrite(strided_rms_norm)"),
                          build_cache_dir=str(tmp_path / "builds"), timeout_s=300,
                          time_budget_s=0.3)
    assert verdict.accepted, (verdict.reason, verdict.detail)


@pytest.mark.gpu
def test_the_template_on_cuda_matches_aten():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch.manual_seed(0)
    for dt, tol in ((torch.float32, 1e-6), (torch.bfloat16, 1e-2)):
        x = (torch.randn(16, 64, 128, 128, device="cuda") * 3 + 1).to(dt)
        y = torch.ops.cudal1.strided_rms_norm(x, 1, 1e-5)
        ref = channel_norm.reference(x.double(), 1, 1e-5)
        assert ((y.double() - ref).norm() / ref.norm()).item() < tol
