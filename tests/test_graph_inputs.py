"""The CUDA-graph wrapper reads in place the tensors a caller passes every call (weights after AOT
autograd) and copies the rest; a replaced tensor is copied from then on. The plan on CPU; the
replays themselves on a GPU."""
import pytest
import torch

from torch_cudal1.engines.builtin import cudagraph
from torch_cudal1.engines.builtin.graph_inputs import InputPlan
from torch_cudal1.verify.static import check_source

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def test_weights_passed_again_are_held_activations_copied():
    plan, w, b = InputPlan(), torch.randn(4, 4), torch.randn(4)
    assert plan.plan([torch.randn(2, 4), w, b, 3], _is_tensor) == set()   # first call: no history
    second = [torch.randn(2, 4), w, b, 3]
    assert plan.wants_second_look() and not plan.nothing_to_hold(second)
    assert plan.plan(second, _is_tensor) == {1, 2}
    assert plan.copied == (0, 3) and plan.settled
    assert plan.held_match([torch.randn(2, 4), w, b, 3])
    w.mul_(2)   # new contents, same tensor: still read in place (the replay sees them)
    assert plan.held_match([torch.randn(2, 4), w, b, 3])


def test_a_replaced_weight_is_copied_from_then_on():
    plan, w, b = InputPlan(), torch.randn(4, 4), torch.randn(4)
    plan.plan([torch.randn(2, 4), w, b], _is_tensor)
    plan.plan([torch.randn(2, 4), w, b], _is_tensor)
    other = w.clone()
    assert not plan.held_match([torch.randn(2, 4), other, b])
    plan.demote_changed([torch.randn(2, 4), other, b])
    assert plan.plan([torch.randn(2, 4), other, b], _is_tensor) == {2}
    # Fewer inputs, or another kind where a tensor was held: nothing out of range is held.
    assert plan.plan([torch.randn(2, 4), 3], _is_tensor) == set()
    w.data = torch.zeros(4, 4)   # the same object pointed at other memory counts as replaced
    plan2 = InputPlan()
    plan2.plan([w], _is_tensor)
    plan2.plan([w], _is_tensor)
    w.data = torch.ones(4, 4)
    assert not plan2.held_match([w])


def test_fresh_inputs_every_call_hold_nothing_and_capture_once():
    # The verifier's calls: new tensors each time. The second look settles without a capture.
    plan = InputPlan()
    plan.plan([torch.randn(3), torch.randn(3)], _is_tensor)
    assert plan.nothing_to_hold([torch.randn(3), torch.randn(3)])
    assert plan.settled and not plan.wants_second_look() and plan.held == ()


def test_the_wrapped_source_is_self_contained_and_passes_static_checks():
    src = cudagraph.wrap("import torch\nclass ModelNew(torch.nn.Module):\n"
                         "    def forward(self, x, w):\n        return x @ w\n")
    assert check_source(src) == ("ok", "")
    assert "class _Cudal1InputPlan" in src and "torch_cudal1" not in src
    ns: dict = {}
    exec(compile(src, "<candidate>", "exec"), ns)   # off the GPU it runs the inner module
    x, w = torch.randn(2, 3), torch.randn(3, 2)
    torch.testing.assert_close(ns["ModelNew"]()(x, w), x @ w)


@pytest.mark.gpu
def test_replays_read_held_weights_in_place_and_copy_activations():
    src = cudagraph.wrap("import torch\nclass ModelNew(torch.nn.Module):\n"
                         "    def forward(self, x, w, b):\n        return torch.relu(x @ w + b)\n")
    ns: dict = {}
    exec(compile(src, "<candidate>", "exec"), ns)
    m = ns["ModelNew"]()
    w, b = torch.randn(64, 32, device="cuda"), torch.randn(32, device="cuda")

    def ref(x, w, b):
        return torch.relu(x @ w + b)
    with torch.no_grad():
        for step in range(6):
            x = torch.randn(16, 64, device="cuda")
            if step == 3:
                w.mul_(-1)                 # in place: the replay must see it
            if step == 4:
                b = torch.randn(32, device="cuda")   # replaced: copied from now on
            out = m(x, w, b)
            torch.testing.assert_close(out, ref(x, w, b))
            if step == 2:
                assert [i for i, _, _ in m._plan.held] == [1, 2], m._plan.held
                assert m._plan.copied == (0,)
        assert [i for i, _, _ in m._plan.held] == [1] and 2 in m._plan.demoted
        first = m(x, w, b)
        m(torch.randn(16, 64, device="cuda"), w, b)
        torch.testing.assert_close(first, ref(x, w, b))   # outputs are fresh, never aliased


@pytest.mark.gpu
def test_replays_survive_cublas_workspaces_being_emptied():
    """torch.compile's cudagraph trees empty cuBLAS's cached workspaces whenever they warm up or
    record; a graph that baked in such a workspace then reads freed memory. Ours must keep
    giving right answers after the caches are emptied, the memory released and reused."""
    src = cudagraph.wrap("import torch\nclass ModelNew(torch.nn.Module):\n"
                         "    def forward(self, x, *ws):\n"
                         "        for w in ws:\n            x = torch.tanh(x @ w)\n        return x\n")
    ns: dict = {}
    exec(compile(src, "<candidate>", "exec"), ns)
    m = ns["ModelNew"]()
    ws = [torch.randn(512, 512, device="cuda") / 24 for _ in range(6)]

    def ref(x):
        for w in ws:
            x = torch.tanh(x @ w)
        return x
    with torch.no_grad():
        for step in range(8):   # the second call captures again (the weights are then held)
            x = torch.randn(256, 512, device="cuda")
            if step >= 3:   # what the trees do, then other work takes the freed memory
                torch._C._cuda_clearCublasWorkspaces()
                torch.cuda.empty_cache()
                junk = [torch.full((1 << 22,), float("nan"), device="cuda") for _ in range(8)]
            torch.testing.assert_close(m(x, *ws), ref(x), rtol=1e-3, atol=1e-3)
            torch.cuda.synchronize()
            if step >= 3:
                del junk
