"""Work that cannot affect the output in inference: no-op dropout, identity views, needless copies.

Dead code elimination itself is ``_util.dead_code`` (run after every pass by the pipeline)."""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ._util import VIEW_OPS, aten, val

_IDENTITY_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default,
                   aten.expand.default, aten.alias.default, aten.detach.default}


def _reaches_placeholder(n) -> bool:
    while isinstance(n, fx.Node) and n.op == "call_function" and n.target in VIEW_OPS:
        n = n.args[0]
    return isinstance(n, fx.Node) and n.op == "placeholder"


def noop_dropout(gm: fx.GraphModule) -> int:
    """``dropout(x, p, train=False)`` and ``dropout(x, 0, ...)`` are ``x``."""
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function":
            continue
        if n.target in (aten.dropout.default, aten.feature_dropout.default,
                        aten.alpha_dropout.default, aten.feature_alpha_dropout.default):
            x, p, train = n.args[:3]
            if not train or p == 0:
                n.replace_all_uses_with(x)
                gm.graph.erase_node(n)
                count += 1
        elif n.target is aten.native_dropout.default:
            x, p, train = n.args[0], n.args[1], n.args[2] if len(n.args) > 2 else None
            if train is False or p == 0:
                # (output, mask): the mask of a no-op dropout is all True.
                for u in list(n.users):
                    if u.target is operator.getitem and u.args[1] == 0:
                        u.replace_all_uses_with(x)
                    elif u.target is operator.getitem:
                        with gm.graph.inserting_before(u):
                            ones = gm.graph.call_function(
                                aten.ones_like.default, (x,), {"dtype": torch.bool})
                        u.replace_all_uses_with(ones)
                    gm.graph.erase_node(u)
                gm.graph.erase_node(n)
                count += 1
    return count


def identity_views(gm: fx.GraphModule) -> int:
    """Views, reshapes and expands to the same shape and strides are the input itself."""
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in _IDENTITY_VIEWS:
            continue
        src, out = val(n.args[0]), val(n)
        if not isinstance(src, torch.Tensor) or not isinstance(out, torch.Tensor):
            continue
        if src.shape == out.shape and src.stride() == out.stride() and src.dtype == out.dtype:
            n.replace_all_uses_with(n.args[0])
            gm.graph.erase_node(n)
            count += 1
    return count


def needless_copies(gm: fx.GraphModule) -> int:
    """``clone`` / ``_to_copy`` that change nothing, of intermediate values (never of inputs: the
    functional graph has no later writes, so sharing an intermediate is safe, sharing an input
    is not)."""
    count = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function":
            continue
        if n.target is aten.clone.default:
            pass
        elif n.target is aten._to_copy.default:
            kw = dict(n.kwargs)
            src = val(n.args[0])
            if src is None or kw.pop("dtype", src.dtype) != src.dtype or \
                    kw.pop("device", src.device) != src.device or \
                    kw.pop("layout", torch.strided) not in (torch.strided, None):
                continue
            kw.pop("non_blocking", None)
            kw.pop("pin_memory", None)
            if kw.pop("memory_format", None) not in (None, torch.preserve_format):
                continue
            if kw:
                continue
        else:
            continue
        mf = n.kwargs.get("memory_format")
        src, out = val(n.args[0]), val(n)
        if not isinstance(src, torch.Tensor) or not isinstance(out, torch.Tensor):
            continue
        if mf not in (None, torch.preserve_format) and src.stride() != out.stride():
            continue
        if _reaches_placeholder(n.args[0]):
            continue
        n.replace_all_uses_with(n.args[0])
        gm.graph.erase_node(n)
        count += 1
    return count
