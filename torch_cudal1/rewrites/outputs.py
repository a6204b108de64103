"""Keep outputs fresh after rewrites: an output that became an input (or a view of one), or the
same tensor as another output, is cloned, so callers never get aliases the reference did not
give them."""
from __future__ import annotations

import torch.fx as fx

from ._util import VIEW_OPS, aten


def _root(n):
    while isinstance(n, fx.Node) and n.op == "call_function" and n.target in VIEW_OPS:
        n = n.args[0]
    return n


def protect(gm: fx.GraphModule) -> int:
    g = gm.graph
    out = next(n for n in g.nodes if n.op == "output")
    seen: set = set()
    count = 0

    def fix(x):
        nonlocal count
        if not isinstance(x, fx.Node):
            return x
        r = _root(x)
        needs = (isinstance(r, fx.Node) and r.op == "placeholder") or x in seen
        seen.add(x)
        if not needs:
            return x
        with g.inserting_before(out):
            c = g.call_function(aten.clone.default, (x,))
        c.meta["val"] = x.meta.get("val")
        count += 1
        return c

    def walk(v):
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        return fix(v)
    out.args = (walk(out.args[0]),)
    return count

