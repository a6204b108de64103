"""The torch.compile'd baselines return outputs in eager's layout where eager's is contiguous:
inductor returns ``cat(empty, transposed)`` (a KV cache's first step) transposed, which the
verifier rightly rejects, and such graphs lost inductor to eager."""
import pytest
import torch

from torch_cudal1.contracts import Candidate
from torch_cudal1.engines import output_layouts
from torch_cudal1.engines.baselines import baseline_candidate
from torch_cudal1.task import Task, load_source
from torch_cudal1.verify import evaluate

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

KV_FIRST_STEP = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, past, x):
        new = x.view(2, 16, 4, 16).transpose(1, 2)
        return torch.cat([past, new], -2), new * 2     # contiguous (eager), transposed


def get_inputs():
    return [torch.zeros(2, 4, 0, 16), torch.randn(2, 16, 64)]


def get_init_inputs():
    return []
'''


def test_the_inductor_baseline_of_a_kv_cache_step_is_accepted():
    task = Task(KV_FIRST_STEP, name="kv_first_step")
    verdict, _ = evaluate(task, baseline_candidate(task, "inductor"), device="cpu", time_it=False)
    assert verdict.accepted, verdict


def test_only_the_outputs_eager_returns_contiguous_are_copied():
    mod = load_source(baseline_candidate(Task(KV_FIRST_STEP), "inductor").source,
                      "cudal1_test_layouts")
    m, ref = mod.ModelNew(), mod.Model()
    past, x = mod.get_inputs()
    with torch.no_grad():
        got, want = m(past, x), ref(past, x)
    assert m._cudal1_fix == (0,)
    assert got[0].is_contiguous() and got[0].stride() == want[0].stride()
    assert not got[1].is_contiguous()          # eager's own transposed layout, left alone
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_layouts_the_fake_run_cannot_tell_copy_nothing():
    def data_dependent(x):
        return x[x > 0].view(-1, 1).t()
    x = torch.randn(16)
    assert output_layouts.eager_contiguous(data_dependent, (x,)) is None
    assert output_layouts.outputs_to_fix(data_dependent(x), None) == ()


def test_the_fake_run_leaves_the_inputs_alone():
    def writes(x):
        x.add_(1)
        return x.t()
    x = torch.zeros(4, 4)
    assert output_layouts.eager_contiguous(writes, (x,)) == [False]
    assert x.abs().sum() == 0
