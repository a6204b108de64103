"""Helpers shared by the rewrites: node values, op classes, replacement nodes."""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

aten = torch.ops.aten

# Ops that only re-describe memory: no kernel runs for them (or none worth counting).
VIEW_OPS = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.expand.default,
    aten.alias.default, aten.detach.default, aten.t.default, aten.transpose.int,
    aten.permute.default, aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.unsqueeze.default, aten.slice.Tensor, aten.select.int, aten.as_strided.default,
    aten.unflatten.int, aten.flatten.using_ints, aten.view_as.default, aten.expand_as.default,
}
# Nodes whose removal saves nothing measurable (they do not count as a rewrite firing).
TRIVIAL = VIEW_OPS | {operator.getitem, aten.empty.memory_format,
                      aten.empty_strided.default, aten.empty_like.default}


def per_dim(vs, nd: int) -> list[int]:
    """An ATen int-list argument (one value for every dim, or one per dim) as ``nd`` ints."""
    vs = [int(v) for v in vs]
    return vs * nd if len(vs) == 1 else vs


def val(n):
    """The fake value FX propagation stored on a node (None for anything else)."""
    return n.meta.get("val") if isinstance(n, fx.Node) else None


def is_float_tensor(v) -> bool:
    return isinstance(v, torch.Tensor) and v.is_floating_point()


def is_random(target) -> bool:
    tags = getattr(target, "tags", ()) or ()
    return torch.Tag.nondeterministic_seeded in tags


def is_mutating(target) -> bool:
    schema = getattr(target, "_schema", None)
    return schema is not None and schema.is_mutable


def is_pure_call(n: fx.Node) -> bool:
    """A call whose result depends only on its arguments and that changes nothing else."""
    if n.op != "call_function":
        return False
    if n.target is operator.getitem:
        return True
    if not isinstance(n.target, torch._ops.OpOverload):
        return False
    return not (is_random(n.target) or is_mutating(n.target)
                or n.target in (aten.empty.memory_format,
                                aten.empty_strided.default, aten.empty_like.default))


def full_like_node(graph: fx.Graph, like, value) -> fx.Node:
    """A new ``aten.full`` node with ``like``'s (fake value's) shape, dtype and device."""
    return graph.call_function(aten.full.default, (list(like.shape), value),
                               {"dtype": like.dtype, "layout": torch.strided,
                                "device": like.device, "pin_memory": False})


def dead_code(gm: fx.GraphModule) -> int:
    """Remove unused pure nodes; return how many of them did real work (not views/getitems).

    Random ops are kept even when unused: dropping one would shift the generator's stream for
    the random ops after it."""
    removed = 0
    for n in reversed(list(gm.graph.nodes)):
        if n.op == "call_function" and not n.users and is_pure_call(n) or (
                n.op == "call_function" and not n.users and n.target in TRIVIAL):
            if n.target not in TRIVIAL:
                removed += 1
            gm.graph.erase_node(n)
    return removed


def normalize_dims(dims, ndim: int) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % ndim if ndim else 0 for d in dims})


def replace_matches(gm: fx.GraphModule, match, build) -> int:
    """For every node ``n`` where ``match(n)`` is not None, ``build(graph, n, match)`` (called
    with new nodes inserted before ``n``) returns the node that replaces it. The count replaced."""
    count = 0
    g = gm.graph
    for n in list(g.nodes):
        m = match(n)
        if m is None:
            continue
        with g.inserting_before(n):
            new = build(g, n, m)
        n.replace_all_uses_with(new)
        g.erase_node(n)
        count += 1
    return count
