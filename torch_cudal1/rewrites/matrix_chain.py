"""Reassociate chains of matrix products by cost (the classic matrix-chain order).

``(A @ B) @ x`` with a vector-like ``x`` costs O(n^3) where ``A @ (B @ x)`` costs O(n^2). A chain is
a tree of ``mm`` (or same-batch ``bmm``) nodes whose inner products are used only inside the tree;
it is rebuilt in the order of fewest multiply-adds when that is cheaper than the order written.
Exact up to floating-point reassociation."""
from __future__ import annotations

import functools

import torch.fx as fx

from ._util import aten, val

_OPS = (aten.mm.default, aten.bmm.default)


def _is_inner(n, op) -> bool:
    return (isinstance(n, fx.Node) and n.op == "call_function" and n.target is op
            and len(n.users) == 1)


def _leaves(n, op) -> tuple[list, object]:
    """(leaves in order, tree) of the product tree rooted at ``n``; a tree is a leaf index or a
    pair of trees."""
    leaves: list = []

    def walk(x):
        if x is n or _is_inner(x, op):
            left, right = walk(x.args[0]), walk(x.args[1])
            return (left, right)
        leaves.append(x)
        return len(leaves) - 1
    tree = walk(n)
    return leaves, tree


def _cost(tree, dims) -> tuple[int, int, int]:
    """(multiply-adds, rows, cols) of evaluating ``tree``."""
    if isinstance(tree, int):
        return 0, dims[tree], dims[tree + 1]
    cl, r, k = _cost(tree[0], dims)
    cr, _, c = _cost(tree[1], dims)
    return cl + cr + r * k * c, r, c


def _best(dims) -> tuple[int, object]:
    n = len(dims) - 1

    @functools.lru_cache(maxsize=None)
    def solve(i, j):
        if i == j:
            return 0, i
        best = None
        for k in range(i, j):
            cl, tl = solve(i, k)
            cr, tr = solve(k + 1, j)
            c = cl + cr + dims[i] * dims[k + 1] * dims[j + 1]
            if best is None or c < best[0]:
                best = (c, (tl, tr))
        return best
    return solve(0, n - 1)


def run(gm: fx.GraphModule) -> int:
    g = gm.graph
    count = 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target not in _OPS:
            continue
        op = n.target
        if any(u.op == "call_function" and u.target is op and len(n.users) == 1 for u in n.users):
            continue      # an inner node of a larger chain: handled from its root
        leaves, tree = _leaves(n, op)
        if len(leaves) < 3:
            continue
        vals = [val(x) for x in leaves]
        if any(v is None for v in vals):
            continue
        shapes = [tuple(v.shape) for v in vals]
        if op is aten.bmm.default and len({s[0] for s in shapes}) != 1:
            continue
        mats = [s[-2:] for s in shapes]
        if any(isinstance(d, object) and not isinstance(d, int) for m in mats for d in m):
            continue      # symbolic sizes
        dims = [mats[0][0]] + [m[1] for m in mats]
        current, _, _ = _cost(tree, dims)
        cost, order = _best(dims)
        if cost >= current:
            continue

        def build(t):
            if isinstance(t, int):
                return leaves[t]
            return g.call_function(op, (build(t[0]), build(t[1])))
        with g.inserting_before(n):
            new = build(order)
        n.replace_all_uses_with(new)
        g.erase_node(n)
        count += 1
    return count
