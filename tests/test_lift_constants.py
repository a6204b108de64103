"""Graph constants become trailing inputs without copying the module's tensors: aot_autograd
calls the compiler with its fake mode active, where a deep copy of a real constant failed
("Attempted to set the storage of a tensor on device "meta" ...", GPT-2's DynamicCache)."""
import pytest
import torch
import torch.fx as fx
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from torch_cudal1.graph.render import lift_constants

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent


def _graph_with_a_constant():
    root = torch.nn.Module()
    root.register_buffer("_tensor_constant0", torch.tensor([1.0, 2.0, 3.0]), persistent=False)
    g = fx.Graph()
    x = g.placeholder("x")
    c = g.get_attr("_tensor_constant0")
    g.output((g.call_function(torch.ops.aten.add.Tensor, (x, c)),))
    return fx.GraphModule(root, g)


def test_constants_are_lifted_under_an_active_fake_mode():
    gm = _graph_with_a_constant()
    with FakeTensorMode():
        lifted, inputs, consts = lift_constants(gm, [])
    (const,) = consts
    assert not isinstance(const, FakeTensor) and const.device.type == "cpu"
    assert const.data_ptr() == gm._tensor_constant0.data_ptr()      # the module's own, not a copy
    assert [n.op for n in lifted.graph.nodes] == ["placeholder", "placeholder", "call_function",
                                                  "output"]
    x = torch.randn(3)
    torch.testing.assert_close(lifted(x, const)[0], x + torch.tensor([1.0, 2.0, 3.0]))
    assert gm.graph is not lifted.graph and any(n.op == "get_attr" for n in gm.graph.nodes)
