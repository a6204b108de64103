"""Render an ATen FX graph as a KernelBench-format Task source.

The graph's inputs (parameters and buffers included) become ``Model.forward`` arguments and
``get_init_inputs()`` returns ``[]``. ``get_inputs()`` draws fresh inputs that respect each real
input's dtype, layout and value range; inputs that random draws cannot replace (integer or bool
tensors such as indices and masks, non-finite values) are captured, and the integer and bool ones
varied from draw to draw where the graph takes it (``vary_captured``). Inputs of library operators
(``library_inputs``) are drawn column by column (floats) or kept as captured (integers).
"""
from __future__ import annotations

import copy
import inspect
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
# Modules whose functions FX code may call by a global of their own (``math_ceil`` for
# ``math.ceil`` on a symbolic size under dynamic shapes): the task imports them by name.
_FUNCTION_MODULES = {"math", "operator", "builtins", "_operator"}


def _global_lines(code_globals: dict, where: str) -> list[str]:
    """Lines that define the globals FX code needs beyond ``_KNOWN_GLOBALS``: each must be a
    function of one of ``_FUNCTION_MODULES`` that its module gives back by its own name (so
    the task file names it, it carries no object of the graph)."""
    import importlib
    lines = []
    for name, obj in sorted(code_globals.items()):
        if name in _KNOWN_GLOBALS:
            continue
        mod, attr = getattr(obj, "__module__", None), getattr(obj, "__name__", None)
        if (mod not in _FUNCTION_MODULES or not isinstance(attr, str) or not attr.isidentifier()
                or getattr(importlib.import_module(mod), attr, None) is not obj):
            unknown = sorted(set(code_globals) - _KNOWN_GLOBALS)
            raise UnsupportedGraph(f"{where} needs globals {unknown}")
        lines.append(f"import {mod}\n{name} = {mod}.{attr}\n")
    return lines

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
        if "vary" in spec:
            real = _vary(real, spec["vary"])
        try:
            return torch.empty_strided(shape, stride, dtype=dtype, device=spec["device"]).copy_(real)
        except RuntimeError:  # overlapping strides: keep the contiguous copy
            return real.to(spec["device"])
    if "columns" in spec:
        cols = [torch.rand(shape[:-1] + [1], dtype=torch.float64) * (c["hi"] - c["lo"]) + c["lo"]
                if "lo" in c else torch.randn(shape[:-1] + [1], dtype=torch.float64) * c["std"]
                + c["mean"] for c in spec["columns"]]
        drawn = torch.cat(cols, -1).to(dtype)
        try:
            return torch.empty_strided(shape, stride, dtype=dtype, device=spec["device"]).copy_(drawn)
        except RuntimeError:  # overlapping strides: keep the contiguous copy
            return drawn.to(spec["device"])
    numel = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    if spec["gen"] == "uniform":
        base = torch.rand(numel, dtype=torch.float64) * (spec["hi"] - spec["lo"]) + spec["lo"]
    elif spec["gen"] == "zeros":
        base = torch.zeros(numel, dtype=torch.float64)
    else:
        base = torch.randn(numel, dtype=torch.float64) * spec["std"] + spec["mean"]
    base = base.to(dtype=dtype, device=spec["device"])
    return base.as_strided(shape, stride)


{vary_source}

def get_inputs():
    return [_make(s) for s in INPUT_SPECS]


def get_init_inputs():
    return []
'''


def _vary(real, values, generator=None):
    """Another valid input of the same kind as the captured CPU tensor ``real``: its elements
    shuffled, and about a quarter of them replaced by ``values`` (what it holds; 0 too for an
    all-ones mask). Drawn on the CPU from ``generator`` (the default one, seeded per draw, in a
    task: the judge and the worker draw the same values from one seed, whatever the device)."""
    flat = real.reshape(-1)[torch.randperm(real.numel(), generator=generator, device="cpu")]
    if values:
        pick = torch.rand(flat.numel(), generator=generator, device="cpu") < 0.25
        choices = torch.tensor(values, dtype=real.dtype, device="cpu")
        flat[pick] = choices[torch.randint(len(values), (int(pick.sum()),), generator=generator,
                                           device="cpu")]
    return flat.view(real.shape)


# what a task's get_inputs() runs, ``_vary`` as its own source (one definition for both sides)
_TASK_INPUTS_CODE = _INPUTS_CODE.replace("{vary_source}", inspect.getsource(_vary))


class UnsupportedGraph(Exception):
    """The graph cannot be rendered as a standalone task (the backend falls back)."""


def lift_constants(gm: fx.GraphModule, inputs: list) -> tuple[fx.GraphModule, list, list]:
    """Turn tensor ``get_attr`` nodes into trailing placeholders; return (graph, inputs, constants).

    Works on a copy of the graph only: the module's tensors are never copied. aot_autograd calls
    the compiler with its fake mode active, and a deep copy of a real tensor there would clone its
    storage through that mode (onto the meta device). The constants are returned as the module
    holds them (detached, real), read with the fake mode suspended. ``get_attr`` nodes that name
    submodules (the subgraphs of higher-order ops) stay in the graph: ``render_task`` renders
    them as modules of the task.
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


# At most this many columns of a library operator's float input get statistics of their own.
_MAX_COLUMNS = 64


def column_stats(t: torch.Tensor):
    """Per column of the last dimension, what ``input_spec`` finds for the whole tensor (``lo``/
    ``hi`` where the column is non-negative, else ``mean``/``std``), or None where that dimension
    is too wide or a value is not finite.

    For the float inputs of library operators, which may mix quantities by column: a
    torchvision box list is (batch index, x1, y1, x2, y2) rows, and drawn over the whole tensor's
    range the batch index reaches 320 for a batch of 1, which ``roi_align``'s kernel reads
    outside its input for (a crash, not an error)."""
    if t.dim() < 2 or not 1 < t.shape[-1] <= _MAX_COLUMNS or t.numel() == 0:
        return None
    f = t.detach().double().reshape(-1, t.shape[-1])
    if not torch.isfinite(f).all():
        return None
    cols = []
    for c in f.unbind(1):
        lo, hi = c.min().item(), c.max().item()
        if lo >= 0:
            cols.append({"lo": lo, "hi": hi if hi > lo else lo + 1.0})
        else:
            std = c.std().item() if c.numel() > 1 else 1.0
            cols.append({"mean": c.mean().item(), "std": std if std > 0 else 1.0})
    return cols


# At most this many distinct values of a captured integer input are listed as its replacements.
_MAX_VALUES = 64


def _variants(t: torch.Tensor):
    """The replacement values ``_vary`` may use for the captured tensor ``t``, or None when it
    is not varied (floating, complex, a single element, or too large to check here).

    Values the tensor holds, so that an index stays inside what it indexes (on a GPU an index
    out of range is a device-side assert, which ends every later CUDA call of the process); a
    mask of all ones may also be 0 (index 0 is valid wherever 1 is). A tensor of all zeros is
    never given ones: RoBERTa's token type ids index a table of one row."""
    if t.is_floating_point() or t.is_complex() or t.numel() < 2 or t.numel() > 1 << 22:
        return None
    if t.dtype == torch.bool:
        return [False, True]
    u = torch.unique(t.detach().cpu()).tolist()
    if u == [1]:
        return [0, 1]
    return u if len(u) <= _MAX_VALUES else []


# Ops whose failure on a device is an assert inside a kernel: a variation of the inputs that
# trips one on a GPU ends the process's use of CUDA, so such graphs keep their inputs there.
_DEVICE_ASSERTS = {"_assert_async", "_functional_assert_async", "_assert_scalar",
                   "_functional_assert_scalar"}


def written_placeholders(gm: fx.GraphModule) -> set:
    """Indices of the placeholders some node writes in place (``copy_`` of a mutated input):
    whoever runs the graph beside another implementation on the same inputs runs it on copies."""
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    written = set()
    for n in gm.graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op == "call_function" and schema is not None and schema.is_mutable:
            for a, arg in zip(schema.arguments, n.args):
                if a.alias_info is not None and a.alias_info.is_write and arg in phs:
                    written.add(phs.index(arg))
    return written


# Ops whose answer depends on which of several writes to one index lands last: with duplicate
# indices, eager and a compiled kernel may each keep another one (and a GPU neither the same
# one twice), so their index inputs are only shuffled, never given duplicates they lacked.
_ORDER_SENSITIVE = {"index_put", "index_put_", "_unsafe_index_put", "_index_put_impl_",
                    "index_copy", "index_copy_", "scatter", "scatter_"}


def _op_name(node: fx.Node):
    """The operator's name without its overload (``index_put`` for ``aten.index_put_.default``
    gives ``index_put_``), or None for a node that calls no operator."""
    return getattr(getattr(node.target, "overloadpacket", None), "__name__", None)


def _feeds_order_sensitive_writes(gm: fx.GraphModule, indices) -> set:
    """The placeholders among ``indices`` from which some ``_ORDER_SENSITIVE`` op is reached."""
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = set()
    for i in indices:
        seen, todo = set(), [phs[i]]
        while todo:
            for u in todo.pop().users:
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
        packets = {_op_name(u) for u in seen if u.op == "call_function"}
        if packets & _ORDER_SENSITIVE:
            found.add(i)
    return found


# Ops that only change how a placeholder's data is viewed or copied: a library operator reached
# through them still takes that data.
_LAYOUT_ONLY = {"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "permute", "transpose",
                "t", "expand", "contiguous", "clone", "_to_copy", "alias", "slice", "select",
                "unbind", "split", "split_with_sizes"}


def library_inputs(gm: fx.GraphModule) -> set:
    """Indices of the placeholders whose data reaches an operator of a library (outside torch's
    own namespaces: torchvision's detection ops, a user's custom op), directly or through
    ``_LAYOUT_ONLY`` ops. What such an operator requires of its inputs (a batch index in a
    column, sorted offsets) is not known here, and its kernel may not check it."""
    import operator

    from .op_imports import library_namespace
    found = set()
    for i, ph in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        seen, todo = set(), [ph]
        while todo and i not in found:
            for u in todo.pop().users:
                if u in seen:
                    continue
                seen.add(u)
                if library_namespace(u):
                    found.add(i)
                elif u.target is operator.getitem or _op_name(u) in _LAYOUT_ONLY:
                    todo.append(u)
    return found


def rng_kept(inputs: list):
    """A context that puts the global random state back afterwards (the CPU's, and that of each
    GPU ``inputs`` live on): the user's graph run in the user's process for cudal1's own checks
    must not move the random numbers the served call then draws (a graph that samples, such as
    Reformer's hashing, would answer differently from eager)."""
    devices = sorted({t.device.index or 0 for t in inputs
                      if isinstance(t, torch.Tensor) and t.device.type == "cuda"})
    return torch.random.fork_rng(devices=devices)


def vary_captured(gm: fx.GraphModule, inputs: list, specs: list, keep: frozenset = frozenset()) -> None:
    """Mark the captured integer and bool inputs (indices, masks, positions) that draws vary.

    Replayed as captured, they would be the same in every draw, and a candidate could treat them
    as constants: drop a mask that was all ones, or bake in the indices of the first call, and
    be wrong on the next. A shuffle of their elements, with some replaced by values the input
    holds (a shuffle alone where duplicates would make the answer depend on the order of writes),
    is another input of the same kind; whether the graph takes it is tried once here, on
    copies (the user's graph, eagerly): where it raises, or answers with NaN or inf where the
    real inputs do not, the inputs stay as captured. Inputs in ``keep`` (those of library
    operators) are never varied: their kernels may not check what this trial cannot see, and a
    kernel reading out of bounds ends the process instead of raising."""
    from ..harness.real_inputs import clone_layout
    on_gpu = any(isinstance(v, torch.Tensor) and v.device.type != "cpu" for v in inputs)
    if on_gpu and any(_op_name(n) in _DEVICE_ASSERTS for n in gm.graph.nodes
                      if n.op == "call_function"):
        return
    cand = {}
    for i, (spec, v) in enumerate(zip(specs, inputs)):
        if spec.get("gen") == "captured" and isinstance(v, torch.Tensor) and i not in keep:
            values = _variants(v)
            if values is not None:
                cand[i] = values
    if not cand:
        return
    for i in _feeds_order_sensitive_writes(gm, cand):
        cand[i] = []
    written = written_placeholders(gm)
    g = torch.Generator().manual_seed(0)

    def copy(i, v):
        if i in cand:
            return _vary(v.detach().cpu(), cand[i], g).to(v.device)
        return clone_layout(v) if i in written and isinstance(v, torch.Tensor) else v

    def nonfinite(outs) -> bool:
        return any(isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex())
                   and not bool(torch.isfinite(o).all()) for o in _flat(outs))
    try:
        with torch.no_grad(), rng_kept(inputs):
            if nonfinite(gm(*[copy(i, v) for i, v in enumerate(inputs)])) and not nonfinite(
                    gm(*[clone_layout(v) if i in written else v for i, v in enumerate(inputs)])):
                return
    except Exception:  # noqa: BLE001 - the graph does not take other values there: keep them
        return
    for i, values in cand.items():
        specs[i]["vary"] = values


def _flat(outs):
    if isinstance(outs, torch.Tensor):
        return [outs]
    if isinstance(outs, (list, tuple)):
        return [x for o in outs for x in _flat(o)]
    return []


def _subgraph_classes(mod: fx.GraphModule, classes: list[str], modules: list,
                      seen: dict, aliases: list[str]) -> list[str]:
    """Classes (appended to ``classes``, a nested one before its parent) for the subgraphs
    ``mod``'s ``get_attr`` nodes name (the branches and bodies of higher-order ops: torch.cond,
    while_loop, flex_attention's score functions), and ``mod``'s ``__init__`` lines that make
    them; each subgraph module is appended to ``modules``, the lines defining the globals its
    code needs to ``aliases``. ``seen``: id -> class name, so a subgraph named twice is one
    class."""
    lines = []
    for n in mod.graph.nodes:
        if n.op != "get_attr":
            continue
        target = str(n.target)
        obj = getattr(mod, target, None) if target.isidentifier() else None
        if not isinstance(obj, fx.GraphModule):
            raise UnsupportedGraph(f"the graph reads {target!r}, which is not a subgraph a task "
                                   "file can hold (a tensor inside a higher-order op's body?)")
        cls = seen.get(id(obj))
        if cls is None:
            own = _subgraph_classes(obj, classes, modules, seen, aliases)
            code = obj.graph.python_code("self")
            aliases.extend(_global_lines(code.globals, f"subgraph {target}"))
            cls = seen[id(obj)] = f"_Subgraph{len(seen)}"
            body = "\n".join("    " + ln if ln.strip() else ""
                             for ln in code.src.strip("\n").splitlines())
            init = "".join(f"        {ln}\n" for ln in own)
            classes.append(f"class {cls}(torch.nn.Module):\n    def __init__(self):\n"
                           f"        super().__init__()\n{init}\n{body.rstrip()}\n")
            modules.append(obj)
        line = f"self.{target} = {cls}()"
        if line not in lines:
            lines.append(line)
    return lines


def render_task(gm: fx.GraphModule, inputs: list, name: str = "graph") -> Task:
    """Render ``gm`` (an ATen graph, inputs already lifted) with its real ``inputs``."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise UnsupportedGraph(f"{len(placeholders)} placeholders but {len(inputs)} inputs")
    for n in gm.graph.nodes:
        if n.op == "call_module":
            raise UnsupportedGraph(f"call_module node {n.target}")
    # the subgraphs of higher-order ops, as modules of their own the model holds
    classes: list[str] = []
    modules: list = []
    aliases: list[str] = []
    init = _subgraph_classes(gm, classes, modules, {}, aliases)
    code = gm.graph.python_code("self")
    aliases.extend(_global_lines(code.globals, "graph code"))
    from .op_imports import OpNotImportable, import_lines
    try:
        registers = "".join(dict.fromkeys(import_lines(m) for m in [gm] + modules))
    except OpNotImportable as e:
        raise UnsupportedGraph(str(e)) from None
    names = [n.name for n in placeholders]
    specs = [input_spec(nm, v) for nm, v in zip(names, inputs)]
    library = frozenset(library_inputs(gm))
    for i in library:
        if specs[i].get("gen") in ("uniform", "randn"):
            cols = column_stats(inputs[i])
            if cols is not None:
                specs[i]["columns"] = cols
    vary_captured(gm, inputs, specs, keep=library)
    tensors = {s["name"]: inputs[i].detach().cpu().contiguous()
               for i, s in enumerate(specs) if s.get("gen") == "captured"}
    body = "\n".join("    " + line if line.strip() else "" for line in code.src.strip("\n").splitlines())
    source = (_PRELUDE + "".join(dict.fromkeys(aliases)) + registers + "import json\n\n\n"
              + "".join(c + "\n\n" for c in classes) + "class Model(torch.nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n"
              + "".join(f"        {ln}\n" for ln in init) + "\n"
              + body.rstrip() + "\n\n\nINPUT_SPECS_JSON = " + repr(json.dumps(specs))
              + "\n" + _TASK_INPUTS_CODE)
    return Task(source=source, name=name, tensors=tensors, graph=gm, real_inputs=list(inputs),
                input_names=names)
