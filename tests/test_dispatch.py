"""The steady-state call: AOT's runtime wrapper is skipped only where it has nothing to do, and
the result stays right either way (mutated inputs, outputs that alias inputs)."""
import torch

from torch_cudal1.serve.graph_runner import GraphRunner


def _compile(fn, cache_dir, runners, monkeypatch):
    orig = GraphRunner.__init__

    def spy(self, *a, **k):
        orig(self, *a, **k)
        runners.append(self)
    monkeypatch.setattr(GraphRunner, "__init__", spy)   # the backend runs at the first call
    # Dynamo remembers shapes per code object across compiles (automatic dynamic shapes): after
    # another test ran nn.Sequential with other shapes, this graph would come out dynamic.
    torch._dynamo.reset()
    return torch.compile(fn, backend="cudal1",
                         options={"cache_dir": str(cache_dir), "baselines": "eager", "rounds": 0})


def test_plain_inference_graph_skips_the_aot_wrapper(tmp_path, monkeypatch):
    runners = []
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    c = _compile(m, tmp_path, runners, monkeypatch)
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(c(x), m(x))
        torch.testing.assert_close(c(x + 1), m(x + 1))
    assert len(runners) == 1 and runners[0].passthrough


def test_input_mutation_and_aliasing_keep_the_aot_wrapper(tmp_path, monkeypatch):
    runners = []

    def f(a):
        a.mul_(2)
        return a.view(-1), a + 1
    c = _compile(f, tmp_path, runners, monkeypatch)
    x = torch.randn(3, 2)
    ref = x.clone()
    with torch.no_grad():
        view, plus = c(x)
    torch.testing.assert_close(x, ref * 2)            # the mutation reached the caller's tensor
    torch.testing.assert_close(plus, ref * 2 + 1)
    assert view.data_ptr() == x.data_ptr()            # the view still aliases the input
    assert runners and not runners[0].passthrough
