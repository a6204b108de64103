"""A reference that keeps state across calls (a recurrent cell reassigning its hidden state, as
KernelBench L3_33): each call is checked from the state at construction, and the draws in
sequence must carry the state forward as the reference does."""
import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.hidden = torch.randn(4, n)
        self.lin = nn.Linear(2 * n, n)

    def forward(self, x):
        self.hidden = torch.tanh(self.lin(torch.cat((x, self.hidden.to(x.device)), dim=1)))
        return self.hidden * 2

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return [8]
'''

HEAD = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.hidden = torch.randn(4, n)
        self.lin = nn.Linear(2 * n, n)
'''

HONEST = HEAD + '''
    def forward(self, x):
        # the same cell with the concatenation split into two products
        n = x.shape[1]
        w = self.lin.weight
        h = torch.tanh(torch.addmm(self.lin.bias, x, w[:, :n].t()) + self.hidden.to(x.device) @ w[:, n:].t())
        self.hidden = h
        return h + h
'''

IGNORES_STATE = HEAD + '''
    def forward(self, x):   # right from the initial state, never moves on
        return torch.tanh(self.lin(torch.cat((x, self.hidden.to(x.device)), dim=1))) * 2
'''

WRONG_UPDATE = HEAD + '''
    def forward(self, x):
        h = torch.tanh(self.lin(torch.cat((x, self.hidden.to(x.device)), dim=1)))
        self.hidden = h * 0.5   # carries a different state forward
        return h * 2
'''

# Right on every call, but returns one buffer it keeps, made afresh only when its state was put
# back (so each checked call, from the state at construction, gets a new one): served, every
# call overwrites the result the caller holds from the one before (KernelBench L3_33's CUDA-L1
# solution on a GPU).
BUFFER_KEPT_WITH_STATE = HEAD + '''
    def forward(self, x):
        h = torch.tanh(self.lin(torch.cat((x, self.hidden.to(x.device)), dim=1)))
        if getattr(self, "_mine", None) is not self.hidden:
            self._out = torch.empty_like(h)
        self.hidden = self._mine = h
        return torch.mul(h, 2, out=self._out)
'''


@pytest.fixture(scope="module")
def task():
    return Task(TASK, name="stateful_cell")


# the state is a plain attribute, created on the CPU and moved by forward (as in KernelBench)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
def test_an_honest_stateful_candidate_is_accepted_and_timed(task, device):
    verdict, timing = evaluate(task, Candidate(HONEST, "test:honest"), device=device, trials=2,
                               time_it=True)
    assert verdict.accepted, verdict
    assert verdict.stats.get("stateful") is True
    assert timing is not None and timing.median_ms > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("source", [IGNORES_STATE, WRONG_UPDATE], ids=["ignores", "wrong_update"])
def test_a_candidate_that_does_not_carry_the_state_forward_is_rejected(task, source, device):
    verdict, _ = evaluate(task, Candidate(source, "test:bad"), device=device, trials=2, time_it=False)
    assert not verdict.accepted and verdict.reason == "mismatch", verdict
    assert "in sequence" in verdict.detail


def test_the_reference_itself_passes_as_its_own_candidate(task):
    src = TASK.replace("class Model(", "class ModelNew(")
    verdict, _ = evaluate(task, Candidate(src, "baseline:eager"), device="cpu", trials=2,
                          time_it=False)
    assert verdict.accepted, verdict


@pytest.mark.parametrize("source,ok", [(HONEST, True), (IGNORES_STATE, False), (WRONG_UPDATE, False)],
                         ids=["honest", "ignores", "wrong_update"])
def test_stateful_checks_hold_with_answers_recomputed(task, source, ok, monkeypatch):
    """Answers recomputed from each draw's buffers (outputs too large to keep) start from the
    state at construction like kept ones did."""
    monkeypatch.setenv("CUDAL1_VERIFY_KEEP_BYTES", "0")
    verdict, timing = evaluate(task, Candidate(source, "test:s"), device="cpu", trials=2, time_it=ok)
    assert verdict.accepted == ok, verdict
    if ok:
        assert verdict.stats["references"] == "recomputed" and timing.median_ms > 0
    else:
        assert verdict.reason == "mismatch" and "in sequence" in verdict.detail


@pytest.mark.parametrize("device", DEVICES)
def test_an_output_buffer_reused_across_calls_in_sequence_is_rejected(task, device):
    verdict, _ = evaluate(task, Candidate(BUFFER_KEPT_WITH_STATE, "test:buffer"), device=device,
                          trials=2, time_it=False)
    assert not verdict.accepted and verdict.reason == "output_aliased", verdict
    assert "state carried across calls" in verdict.detail


def test_a_reused_output_buffer_is_caught_with_answers_recomputed(task, monkeypatch):
    """Outputs too large to keep: the draws in sequence are checked pairwise, each with the one
    before, which is where a kept buffer shows."""
    monkeypatch.setenv("CUDAL1_VERIFY_KEEP_BYTES", "0")
    verdict, _ = evaluate(task, Candidate(BUFFER_KEPT_WITH_STATE, "test:buffer"), device="cpu",
                          trials=2, time_it=False)
    assert not verdict.accepted and verdict.reason == "output_aliased", verdict
    assert "state carried across calls" in verdict.detail
