"""Render an ATen FX graph as a KernelBench-format Task source.

The graph's inputs (parameters and buffers included) become ``Model.forward`` arguments and
``get_init_inputs()`` returns ``[]``. ``get_inputs()`` draws fresh inputs that respect each real
input's dtype, layout and value range; inputs that random draws cannot replace (integer or bool
tensors such as indices and masks, non-finite values) are captured and replayed.
"""
from __future__ import annotations

import copy
import json

import torch
import torch.fx as fx

from ..task import Task

# Names FX code generation may reference, and how the rendered module provides them.
_PRELUDE = '''\
# Rendered by torch_cudal1 from an FX graph: a KernelBench-format task.
import math
import os

import torch
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
from torch import device

inf = math.inf
nan = math.nan
NoneType = type(None)
_CAPTURED = None
'''
_KNOWN_GLOBALS = {"torch", "device", "inf", "nan", "NoneType", "fx_pytree", "pytree", "math"}

_INPUTS_CODE = '''

INPUT_SPECS = json.loads(INPUT_SPECS_JSON)


def _captured():
    global _CAPTURED
    if _CAPTURED is None:
        from safetensors.torch import load_file
        here = os.path.dirname(os.path.abspath(__file__))
        _CAPTURED = load_file(os.path.join(here, "inputs.safetensors"))
    return _CAPTURED


def _make(spec):
    if spec["kind"] != "tensor":
        return spec["value"]
    dtype = getattr(torch, spec["dtype"])
    shape, stride = spec["shape"], spec["stride"]
    if spec["gen"] == "captured":
        real = _captured()[spec["name"]]
        try:
            return torch.empty_strided(shape, stride, dtype=dtype, device=spec["device"]).copy_(real)
        except RuntimeError:  # overlapping strides: keep the contiguous copy
            return real.to(spec["device"])
    numel = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    if spec["gen"] == "uniform":
        base = torch.rand(numel, dtype=torch.float64) * (spec["hi"] - spec["lo"]) + spec["lo"]
    elif spec["gen"] == "zeros":
        base = torch.zeros(numel, dtype=torch.float64)
    else:
        base = torch.randn(numel, dtype=torch.float64) * spec["std"] + spec["mean"]
    base = base.to(dtype=dtype, device=spec["device"])
    return base.as_strided(shape, stride)


def get_inputs():
    return [_make(s) for s in INPUT_SPECS]


def get_init_inputs():
    return []
'''


class UnsupportedGraph(Exception):
    """The graph cannot be rendered as a standalone task (the backend falls back)."""


def lift_constants(gm: fx.GraphModule, inputs: list) -> tuple[fx.GraphModule, list, list]:
    """Turn tensor ``get_attr`` nodes into trailing placeholders; return (graph, inputs, constants).

    Works on a copy of the graph only: the module's tensors are never copied. aot_autograd calls
    the compiler with its fake mode active, and a deep copy of a real tensor there would clone its
    storage through that mode (onto the meta device). The constants are returned as the module
    holds them (detached, real), read with the fake mode suspended. ``get_attr`` nodes that name
    submodules (the subgraphs of higher-order ops) stay in the graph: the graph still runs, and
    ``render_task`` says why it cannot be rendered.
    """
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
    graph = copy.deepcopy(gm.graph)     # nodes and codegen; node meta copied shallowly
    consts = []
    last_ph = None
    for n in graph.nodes:
        if n.op == "placeholder":
            last_ph = n
    with unset_fake_temporarily():
        for n in list(graph.nodes):
            if n.op != "get_attr":
                continue
            value = gm
            for part in n.target.split("."):
                value = getattr(value, part)
            if not isinstance(value, torch.Tensor):
                continue
            if isinstance(value, FakeTensor):
                raise UnsupportedGraph(f"attribute {n.target} is a fake tensor (no real value)")
            anchor = last_ph if last_ph is not None else next(iter(graph.nodes))
            with (graph.inserting_after(anchor) if last_ph is not None
                  else graph.inserting_before(anchor)):
                ph = graph.placeholder(f"const{len(consts)}")
            ph.meta = dict(n.meta)
            last_ph = ph
            n.replace_all_uses_with(ph)
            graph.erase_node(n)
            consts.append(value.detach())
    graph.lint()
    lifted = fx.GraphModule(gm, graph)   # copies only what the remaining get_attr nodes name
    return lifted, list(inputs) + consts, consts


def input_spec(name: str, value) -> dict:
    if isinstance(value, torch.SymInt) or type(value) is int:
        return {"name": name, "kind": "int", "value": int(value)}
    if isinstance(value, (torch.SymFloat, float)):
        return {"name": name, "kind": "float", "value": float(value)}
    if isinstance(value, bool):
        return {"name": name, "kind": "bool", "value": value}
    if not isinstance(value, torch.Tensor):
        raise UnsupportedGraph(f"input {name} is a {type(value).__name__}")
    t = value.detach()
    spec = {"name": name, "kind": "tensor", "shape": list(t.shape), "stride": list(t.stride()),
            "dtype": str(t.dtype).replace("torch.", ""), "device": str(t.device)}
    if not (t.is_floating_point() or t.is_complex()) or t.is_complex():
        spec["gen"] = "captured"
    elif t.numel() == 0:
        spec["gen"] = "zeros"
    else:
        f = t.double()
        if not torch.isfinite(f).all():
            spec["gen"] = "captured"
        else:
            lo, hi = f.min().item(), f.max().item()
            if lo >= 0:
                # Non-negative tensors (variances, scales, probabilities) stay non-negative.
                spec.update(gen="uniform", lo=lo, hi=hi if hi > lo else lo + 1.0)
            else:
                std = f.std().item() if f.numel() > 1 else 1.0
                spec.update(gen="randn", mean=f.mean().item(), std=std if std > 0 else 1.0)
    return spec


def render_task(gm: fx.GraphModule, inputs: list, name: str = "graph") -> Task:
    """Render ``gm`` (an ATen graph, inputs already lifted) with its real ``inputs``."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise UnsupportedGraph(f"{len(placeholders)} placeholders but {len(inputs)} inputs")
    for n in gm.graph.nodes:
        if n.op == "call_module":
            raise UnsupportedGraph(f"call_module node {n.target}")
    code = gm.graph.python_code("self")
    unknown = set(code.globals) - _KNOWN_GLOBALS
    if unknown:
        raise UnsupportedGraph(f"graph code needs globals {sorted(unknown)}")
    from .op_imports import OpNotImportable, import_lines
    try:
        registers = import_lines(gm)
    except OpNotImportable as e:
        raise UnsupportedGraph(str(e)) from None
    names = [n.name for n in placeholders]
    specs = [input_spec(nm, v) for nm, v in zip(names, inputs)]
    tensors = {s["name"]: inputs[i].detach().cpu().contiguous()
               for i, s in enumerate(specs) if s.get("gen") == "captured"}
    body = "\n".join("    " + line if line.strip() else "" for line in code.src.strip("\n").splitlines())
    source = (_PRELUDE + registers + "import json\n\n\nclass Model(torch.nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n\n"
              + body.rstrip() + "\n\n\nINPUT_SPECS_JSON = " + repr(json.dumps(specs))
              + "\n" + _INPUTS_CODE)
    return Task(source=source, name=name, tensors=tensors, graph=gm, real_inputs=list(inputs),
                input_names=names)
