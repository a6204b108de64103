"""The judge (verify/judge.py) and what only it can decide: tolerances that follow the user's
float32 precision, a clock the candidate cannot edit, how long a call may take, and inputs that
a cache keyed on a few of their values cannot follow."""
import time
from pathlib import Path

import pytest
import torch

from torch_cudal1.contracts import Candidate
from torch_cudal1.harness.calls import mix
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

ADV = Path(__file__).parent / "adversarial"


def _task(name: str) -> Task:
    return Task.from_file(ADV / "tasks" / f"{name}.py")


def _source(name: str) -> str:
    return (ADV / name).read_text()


@pytest.fixture(autouse=True)
def _forked(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "1")


def test_float32_tolerance_follows_the_users_precision():
    """Operands rounded to fp16 (TF32's 10 bits): refused at "highest", PyTorch's default,
    accepted where the user allowed TF32 ("high")."""
    task, src = _task("linear_act"), _source("fp16_operands.py")
    strict, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False, precision="highest")
    assert strict.reason == "mismatch" and "tolerance 0.0001" in strict.detail, strict.detail
    loose, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False, precision="high")
    assert loose.accepted, (loose.reason, loose.detail)
    assert loose.stats["precision"] == "high"
    honest, _ = evaluate(task, Candidate(_source("honest_fused_linear.py"), "test:fp32"),
                         time_it=False, precision="highest")
    assert honest.accepted and honest.stats["rel_error"] < 1e-5


def test_precision_defaults_to_this_processs_setting():
    task, src = _task("linear_act"), _source("fp16_operands.py")
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        verdict, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False)
    finally:
        torch.set_float32_matmul_precision(before)
    assert verdict.accepted and verdict.stats["precision"] == "high"


HALVED = '''
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Right answers in 3 ms of real work; halves the time the worker wrote down for each call
    before it (through a traceback's frames: nothing rebound)."""

    def forward(self, a, b):
        end = time.perf_counter() + 0.003
        while time.perf_counter() < end:
            pass
        try:
            raise RuntimeError
        except RuntimeError as e:
            frame = e.__traceback__.tb_frame
        while frame is not None:
            for rec in frame.f_locals.get("recs") or []:
                if isinstance(rec, dict) and "ms" in rec and not rec.get("halved"):
                    rec["ms"], rec["halved"] = rec["ms"] / 2, True
            frame = frame.f_back
        return a.unsqueeze(1) * b
'''


def test_edited_times_buy_at_most_a_quarter():
    """Times edited down to half what the calls took are not tampering beyond doubt, but the
    judge's clock raises the median back toward the true 3 ms (0.8 of it, less the noise of a
    busy host's clock)."""
    verdict, timing = evaluate(_task("diag_matmul"), Candidate(HALVED, "test:halved"),
                               time_budget_s=0.5)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert timing.extra["explained"] < 0.8 and timing.extra["scaled_by_judge"] > 1.0
    assert timing.median_ms >= 0.7 * 3.0, timing


def test_a_call_that_hangs_later_is_cut_in_proportion_to_the_reference():
    t0 = time.monotonic()
    verdict, _ = evaluate(_task("diag_matmul"), Candidate(_source("hang_later.py"), "test:hang"),
                          timeout_s=300, time_budget_s=0.3)
    assert verdict.reason == "timeout", (verdict.reason, verdict.detail)
    assert time.monotonic() - t0 < 60   # not the 300 s limit of the whole verification


def test_partial_refill_keeps_structure():
    torch.manual_seed(0)
    a, b = torch.randn(6, 6), torch.randn(6, 6)
    sym_a, sym_b = a + a.T, b + b.T
    m = mix(sym_a, sym_b, seed=3)
    assert torch.equal(m, m.T) and not torch.equal(m, sym_a) and not torch.equal(m, sym_b)
    tri = mix(torch.triu(a), torch.triu(b), seed=4)
    assert torch.equal(tri, torch.triu(tri))
    x, y = torch.randn(8, 3, 5), torch.randn(8, 3, 5)
    z = mix(x, y, seed=5)
    rows = [bool(torch.equal(z[i], y[i])) for i in range(8)]
    assert any(rows) and not all(rows)
    assert all(torch.equal(z[i], x[i]) for i in range(8) if not rows[i])
    one = mix(torch.randn(1, 7), torch.randn(1, 7), seed=6)   # batch of one: the next dimension
    assert one.shape == (1, 7)
    assert torch.equal(mix(x, y, seed=5), z)   # the same seed, the same mix (judge and worker)
