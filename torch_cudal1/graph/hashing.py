"""A canonical hash of an FX graph.

Independent of node names, module and variable names, object ids and PYTHONHASHSEED: each node is
written as its position, its op, the qualified name of its target and its arguments with other
nodes replaced by their positions.
"""
from __future__ import annotations

import hashlib
import math

import torch
import torch.fx as fx


def _target_name(target) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "op:" + str(target)
    mod = getattr(target, "__module__", None) or ""
    qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"fn:{mod}.{qual}"


def _canon(value, index: dict) -> str:
    if isinstance(value, fx.Node):
        return f"%{index[value]}"
    if isinstance(value, (list, tuple)):
        inner = ",".join(_canon(v, index) for v in value)
        return ("[" + inner + "]") if isinstance(value, list) else ("(" + inner + ")")
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_canon(v, index)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, float):
        return "f" + (repr(value) if math.isfinite(value) else str(value))
    if isinstance(value, (bool, int, str, type(None))):
        return type(value).__name__ + ":" + repr(value)
    if isinstance(value, slice):
        return f"slice({_canon(value.start, index)},{_canon(value.stop, index)},{_canon(value.step, index)})"
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    if isinstance(value, torch.SymInt):
        return "sym:" + str(value)
    return type(value).__name__ + ":" + repr(value)


def canonical_graph_text(graph: fx.Graph) -> str:
    index: dict = {}
    lines = []
    for i, node in enumerate(graph.nodes):
        index[node] = i
        target = "" if node.op in ("placeholder", "output") else _target_name(node.target)
        lines.append(f"{i}|{node.op}|{target}|{_canon(node.args, index)}|{_canon(node.kwargs, index)}")
        sub = _subgraph(graph, node)
        if sub is not None:   # a higher-order op's branch: its own code, not only its name
            lines.append("{" + canonical_graph_text(sub) + "}")
    return "\n".join(lines)


def _subgraph(graph: fx.Graph, node: fx.Node):
    if node.op != "get_attr" or graph.owning_module is None:
        return None
    value = graph.owning_module
    for part in str(node.target).split("."):
        value = getattr(value, part, None)
    return value.graph if isinstance(value, fx.GraphModule) else None


def graph_hash(graph: fx.Graph) -> str:
    return hashlib.sha256(canonical_graph_text(graph).encode()).hexdigest()


def _erase_ints(value):
    if isinstance(value, (list, tuple)):
        return type(value)(_erase_ints(v) for v in value)
    if isinstance(value, dict):
        return {k: _erase_ints(v) for k, v in value.items()}
    if isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool):
        return 0
    return value


def structure_hash(graph: fx.Graph) -> str:
    """The graph's hash with every integer argument erased: equal for one model's graphs
    specialised to different sizes (the sizes live in views' and reshapes' integer arguments,
    and in sym-size placeholders), different for different operator sequences."""
    index: dict = {}
    lines = []
    for i, node in enumerate(graph.nodes):
        index[node] = i
        target = "" if node.op in ("placeholder", "output") else _target_name(node.target)
        lines.append(f"{i}|{node.op}|{target}|{_canon(_erase_ints(node.args), index)}|"
                     f"{_canon(_erase_ints(node.kwargs), index)}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
