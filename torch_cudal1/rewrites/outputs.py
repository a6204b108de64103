"""Keep outputs as the reference gave them after rewrites: an output that became an input (or a
view of one), or the same tensor as another output, is cloned, so callers never get aliases the
reference did not give them; an output a rewrite replaced, contiguous before, is made contiguous
again (a fused kernel may write another layout, which the verifier refuses and a caller's
``view`` cannot take)."""
from __future__ import annotations

import itertools

import torch
import torch.fx as fx

from ._util import VIEW_OPS, aten


def _root(n):
    while isinstance(n, fx.Node) and n.op == "call_function" and n.target in VIEW_OPS:
        n = n.args[0]
    return n


def _flat(v) -> list:
    return [y for x in v for y in _flat(x)] if isinstance(v, (list, tuple)) else [v]


def layouts(gm: fx.GraphModule) -> list[tuple[str, bool] | None]:
    """Per output (flattened): its node's name and whether its value is contiguous."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return [(x.name, x.meta["val"].is_contiguous())
            if isinstance(x, fx.Node) and isinstance(x.meta.get("val"), torch.Tensor) else None
            for x in _flat(out.args[0])]


def protect(gm: fx.GraphModule, before: list | None = None) -> int:
    """``before``: ``layouts`` of the graph before the rewrites."""
    g = gm.graph
    out = next(n for n in g.nodes if n.op == "output")
    seen: set = set()
    count = 0
    position = itertools.count()   # of each output in ``before``

    def fix(x):
        nonlocal count
        was = before[next(position)] if before else None
        if not isinstance(x, fx.Node):
            return x
        r = _root(x)
        needs = (isinstance(r, fx.Node) and r.op == "placeholder") or x in seen
        seen.add(x)
        if needs:
            with g.inserting_before(out):
                c = g.call_function(aten.clone.default, (x,),
                                    {"memory_format": torch.contiguous_format} if was and was[1] else {})
        elif was and was[1] and was[0] != x.name:   # replaced: free where already contiguous
            with g.inserting_before(out):
                c = g.call_function(aten.contiguous.default, (x,))
        else:
            return x
        c.meta["val"] = x.meta.get("val")
        count += 1
        return c

    def walk(v):
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        return fix(v)
    out.args = (walk(out.args[0]),)
    return count

