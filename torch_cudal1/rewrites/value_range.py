"""Fold what the graph proves about value ranges, for every input.

Each floating-point node gets an interval [lo, hi] from its op (``relu(x) >= 0``,
``sigmoid(x)`` in [0, 1], clamps, min/max, constants, monotone functions, ...). Then:

* ``clamp``/``clamp_min``/``clamp_max``/``hardtanh``/``relu``/``minimum``/``maximum`` whose bound
  can never bind is its input (``clamp(relu(x), min=-1) == relu(x)``);
* one whose bound always binds is a constant (``minimum(relu(x), 0) == 0``), and so is any
  elementwise node whose interval is a single point; the work feeding it becomes dead code;
* a difference of a value with itself is zero, and a pointwise op of single points is evaluated
  once (``gelu(x - x) == 0``, the whole product feeding ``x`` dead).

Exact for every input whose intermediate values are finite (a NaN would propagate through the
original op but not through the constant, and ``inf - inf`` is NaN)."""
from __future__ import annotations

import math

import torch
import torch.fx as fx

from ._util import VIEW_OPS, aten, full_like_node, is_float_tensor, is_random, val

INF = math.inf
UNKNOWN = (-INF, INF)

_CONSTANT_OPS = {aten.full.default, aten.zeros.default, aten.ones.default, aten.full_like.default,
                 aten.zeros_like.default, aten.ones_like.default, aten.scalar_tensor.default}


def _sigmoid(x: float) -> float:
    if x == -INF:
        return 0.0
    if x == INF:
        return 1.0
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def _safe(lo, hi):
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        return UNKNOWN
    return (lo, hi)


def _mul(a, b):
    prods = []
    for x in a:
        for y in b:
            p = x * y
            if math.isnan(p):
                return UNKNOWN
            prods.append(p)
    return _safe(min(prods), max(prods))


# Lower bounds of common non-monotone activations (rounded down).
_FLOORS = {aten.gelu.default: -0.1701, aten.silu.default: -0.2785, aten.mish.default: -0.3089,
           aten.hardswish.default: -0.375, aten.softplus.default: 0.0}


class Ranges:
    def __init__(self):
        self.r: dict = {}

    def of(self, x):
        """Interval of an argument: a node's, or a Python number's."""
        if isinstance(x, fx.Node):
            return self.r.get(x, UNKNOWN)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return (float(x), float(x)) if not math.isnan(x) else UNKNOWN
        return UNKNOWN

    def compute(self, n: fx.Node):
        t, a = n.target, n.args
        if not is_float_tensor(val(n)):
            return UNKNOWN
        point = self._pointwise_of_points(n)
        if point is not None:
            return point
        of = self.of
        if t in (aten.full.default, aten.full_like.default):
            return of(a[1])
        if t in (aten.zeros.default, aten.zeros_like.default):
            return (0.0, 0.0)
        if t in (aten.ones.default, aten.ones_like.default):
            return (1.0, 1.0)
        if t is aten.scalar_tensor.default:
            return of(a[0])
        if t is torch.tensor:
            flat = torch.tensor(a[0], dtype=torch.float64).flatten()
            if flat.numel() == 0 or not torch.isfinite(flat).all():
                return UNKNOWN
            return (flat.min().item(), flat.max().item())
        if t in VIEW_OPS or t in (aten.clone.default, aten._to_copy.default, aten.amax.default,
                                  aten.amin.default, aten.contiguous.default,
                                  aten.lift_fresh_copy.default):
            return of(a[0])
        if t is aten.cat.default:
            rs = [of(x) for x in a[0]]
            return (min(r[0] for r in rs), max(r[1] for r in rs))
        if t is aten.where.self:
            x, y = of(a[1]), of(a[2])
            return (min(x[0], y[0]), max(x[1], y[1]))
        if t is aten.relu.default:
            lo, hi = of(a[0])
            return (max(lo, 0.0), max(hi, 0.0))
        if t in (aten.clamp.default, aten.hardtanh.default, aten.clamp_min.default,
                 aten.clamp_max.default):
            mn, mx = self._bounds(n)
            lo, hi = of(a[0])
            if mn is not None:
                lo, hi = max(lo, mn), max(hi, mn)
            if mx is not None:
                lo, hi = min(lo, mx), min(hi, mx)
            return (lo, hi)
        if t is aten.sigmoid.default:
            lo, hi = of(a[0])
            return (_sigmoid(lo), _sigmoid(hi))
        if t is aten.tanh.default:
            lo, hi = of(a[0])
            return (math.tanh(lo), math.tanh(hi))
        if t is aten.hardsigmoid.default:
            return (0.0, 1.0)
        if t is aten.exp.default:
            lo, hi = of(a[0])
            return (0.0 if lo < -700 else math.exp(min(lo, 700)), INF if hi > 700 else math.exp(hi))
        if t in (aten.sqrt.default, aten.rsqrt.default, aten.softplus.default):
            return (0.0, INF)
        if t is aten.abs.default:
            lo, hi = of(a[0])
            if lo >= 0:
                return (lo, hi)
            if hi <= 0:
                return (-hi, -lo)
            return (0.0, max(-lo, hi))
        if t is aten.neg.default:
            lo, hi = of(a[0])
            return (-hi, -lo)
        if t in (aten._softmax.default, aten.softmax.int):
            return (0.0, 1.0)
        if t in (aten._log_softmax.default, aten.log_softmax.int):
            return (-INF, 0.0)
        if t in _FLOORS:
            return (_FLOORS[t], INF)
        if t is aten.pow.Tensor_Scalar and isinstance(a[1], (int, float)) and a[1] % 2 == 0 and a[1] > 0:
            return (0.0, INF)
        if t in (aten.minimum.default, aten.maximum.default):
            x, y = of(a[0]), of(a[1])
            f = min if t is aten.minimum.default else max
            return (f(x[0], y[0]), f(x[1], y[1]))
        if t in (aten.add.Tensor, aten.sub.Tensor) and n.kwargs.get("alpha", 1) == 1 and len(a) == 2:
            x, y = of(a[0]), of(a[1])
            if t is aten.sub.Tensor:
                y = (-y[1], -y[0])
            return _safe(x[0] + y[0], x[1] + y[1])
        if t is aten.mul.Tensor:
            return _mul(of(a[0]), of(a[1]))
        if t is aten.div.Tensor and not isinstance(a[1], fx.Node) and isinstance(a[1], (int, float)) \
                and a[1] != 0:
            return _mul(of(a[0]), (1.0 / a[1], 1.0 / a[1]))
        if t in (aten.sum.dim_IntList, aten.mean.dim, aten.sum.default, aten.mean.default):
            lo, hi = of(a[0])    # only the sign survives rounding of a sum or mean
            return (0.0 if lo >= 0 else -INF, 0.0 if hi <= 0 else INF)
        return UNKNOWN

    def _pointwise_of_points(self, n: fx.Node):
        """A pointwise op whose tensor operands are each a single finite value: that op of those
        values, evaluated once in the node's dtype (None where that does not apply)."""
        t = n.target
        if not isinstance(t, torch._ops.OpOverload) or torch.Tag.pointwise not in t.tags \
                or is_random(t) or any(isinstance(v, fx.Node) for v in n.kwargs.values()):
            return None
        args, nodes = [], 0
        for x in n.args:
            if isinstance(x, fx.Node):
                lo, hi = self.of(x)
                v = val(x)
                if lo != hi or not math.isfinite(lo) or not isinstance(v, torch.Tensor):
                    return None
                args.append(torch.tensor(lo, dtype=v.dtype))
                nodes += 1
            elif isinstance(x, (list, tuple)) and any(isinstance(e, fx.Node) for e in x):
                return None
            else:
                args.append(x)
        if not nodes:
            return None
        try:
            r = t(*args, **n.kwargs)
        except Exception:  # noqa: BLE001 - not evaluable on scalars here: no fold
            return None
        if not isinstance(r, torch.Tensor) or r.numel() != 1:
            return None
        f = float(r)
        return (f, f) if math.isfinite(f) else None

    @staticmethod
    def _bounds(n):
        t, a, kw = n.target, n.args, n.kwargs
        num = (int, float)
        if t is aten.clamp.default:
            mn = a[1] if len(a) > 1 else kw.get("min")
            mx = a[2] if len(a) > 2 else kw.get("max")
        elif t is aten.hardtanh.default:
            mn = a[1] if len(a) > 1 else kw.get("min_val", -1.0)
            mx = a[2] if len(a) > 2 else kw.get("max_val", 1.0)
        elif t is aten.clamp_min.default:
            mn, mx = a[1], None
        else:
            mn, mx = None, a[1]
        mn = float(mn) if isinstance(mn, num) else None
        mx = float(mx) if isinstance(mx, num) else None
        return mn, mx


def _fold(n: fx.Node, R: Ranges):
    """What ``n`` is, when its bounds decide it: an input node, a constant (float), or None."""
    t, a = n.target, n.args
    out = val(n)
    if t is aten.relu.default:
        lo, hi = R.of(a[0])
        if lo >= 0:
            return a[0]
        if hi <= 0:
            return 0.0
        return None
    if t in (aten.clamp.default, aten.hardtanh.default, aten.clamp_min.default, aten.clamp_max.default):
        if len(a) > 1 and isinstance(a[1], fx.Node) or len(a) > 2 and isinstance(a[2], fx.Node):
            return None
        mn, mx = Ranges._bounds(n)
        lo, hi = R.of(a[0])
        if mx is not None and lo >= mx:
            return mx
        if mn is not None and hi <= mn:
            return mn if mx is None else min(mn, mx)
        if (mn is None or lo >= mn) and (mx is None or hi <= mx):
            return a[0]
        return None
    if t in (aten.minimum.default, aten.maximum.default):
        x, y = R.of(a[0]), R.of(a[1])
        if t is aten.maximum.default:
            x, y = (-x[1], -x[0]), (-y[1], -y[0])
        pick = a[0] if x[1] <= y[0] else a[1] if y[1] <= x[0] else None
        return pick
    if t is aten.sub.Tensor and len(a) == 2 and a[0] is a[1] and n.kwargs.get("alpha", 1) == 1:
        return 0.0
    # Adding zero or multiplying by one (a constant the graph proved) leaves the other operand.
    if t in (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor) and len(a) == 2 \
            and n.kwargs.get("alpha", 1) == 1:
        unit = (1.0, 1.0) if t is aten.mul.Tensor else (0.0, 0.0)
        if R.of(a[1]) == unit:
            return a[0]
        if t is not aten.sub.Tensor and R.of(a[0]) == unit:
            return a[1]
    return None


def _same(node, out) -> bool:
    v = val(node)
    return isinstance(v, torch.Tensor) and v.shape == out.shape and v.dtype == out.dtype


def run(gm: fx.GraphModule) -> int:
    g = gm.graph
    R = Ranges()
    count = 0
    for n in list(g.nodes):
        if n.op == "placeholder":
            continue
        if n.op != "call_function":
            continue
        R.r[n] = R.compute(n)
        out = val(n)
        if not is_float_tensor(out):
            continue
        res = _fold(n, R)
        if isinstance(res, fx.Node):
            lo, hi = R.of(res)
            if lo == hi and math.isfinite(lo) and not _same(res, out):
                res = lo
            elif not _same(res, out):
                res = None
        if res is None:
            lo, hi = R.r[n]
            if lo == hi and math.isfinite(lo) and n.target not in _CONSTANT_OPS \
                    and n.target not in VIEW_OPS:
                res = lo
        if res is None:
            continue
        if isinstance(res, fx.Node):
            n.replace_all_uses_with(res)
        else:
            with g.inserting_before(n):
                new = full_like_node(g, out, res)
            new.meta["val"] = out
            R.r[new] = (float(res), float(res))
            n.replace_all_uses_with(new)
        R.r[n] = R.of(res)
        g.erase_node(n)
        count += 1
    return count
