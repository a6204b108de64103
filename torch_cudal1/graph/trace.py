"""An ATen-level, functional FX graph for any Task, and its rendering back as a ``ModelNew``.

Two sources of graphs:

* ``task.graph`` (a task rendered from torch.compile): its placeholders are all of ``Model.forward``'s
  inputs, so the graph is used as it is.
* any KernelBench-format task: ``Model(*get_init_inputs())`` is built on the meta device (no memory,
  no kernels), its parameters, buffers and plain tensor attributes (``self.h0 = torch.randn(..)``)
  are lifted to inputs with ``functional_call`` and the forward is traced by ``make_fx`` with
  functionalization on fake tensors that live on the target device. Nothing runs on the device,
  so a task whose inputs would be 16 GiB on a GPU traces in milliseconds on a CPU-only machine.

The (rewritten) graph is rendered as ``class ModelNew(Model)`` whose forward calls the graph function
with ``self``'s state tensors (in lifted order) and the inputs, rebuilds Model.forward's output
structure, and assigns back the state the forward reassigned (``self.hidden = new``), which the
graph returns after the outputs. Inputs whose shapes differ from the traced ones fall back to
``Model.forward``.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from ..task import Task


class TraceError(Exception):
    """The task cannot be traced to a static functional ATen graph (no candidate from it)."""


@dataclass
class Traced:
    gm: fx.GraphModule                 # placeholders: state tensors first, then forward inputs
    state_names: list = field(default_factory=list)   # parameters, buffers, tensor attributes
    state_updates: list = field(default_factory=list)  # state names forward reassigns: extra outputs
    out_spec: str | None = None        # pytree spec (dumped) of Model.forward's output; None: as is
    input_meta: list = field(default_factory=list)    # per forward input: (shape, dtype), ("=", scalar) or None
    from_task_graph: bool = False


def _input_meta(inputs) -> list:
    """What the traced graph is specialised to: tensors' (shape, dtype), scalars' values."""
    meta = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            meta.append((tuple(x.shape), str(x.dtype)))
        elif isinstance(x, (bool, int, float, str, type(None))):
            meta.append(("=", x))
        else:
            meta.append(None)
    return meta


def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode(allow_non_fake_inputs=False)


def _faker(mode, device: torch.device):
    conv = mode.fake_tensor_converter

    def fake(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.device != device:   # meta, or real on another device: only the metadata matters
            return conv.from_meta_and_device(mode, t.to("meta"), device)
        return mode.from_tensor(t)
    return fake


def _meta_inputs(mod) -> list:
    """``get_inputs()`` without allocating: on the meta device when the task allows it."""
    try:
        with torch.device("meta"):
            return list(mod.get_inputs())
    except Exception:  # noqa: BLE001 - e.g. ``.cuda()`` or ``.item()`` in get_inputs: draw real ones
        return list(mod.get_inputs())


def _build_model(mod):
    init = list(mod.get_init_inputs())
    try:
        with torch.device("meta"):
            return mod.Model(*init).eval()
    except Exception:  # noqa: BLE001 - init that needs real values
        return mod.Model(*init).eval()


def _state_tensors(model) -> tuple[list, list]:
    """(names, tensors) of the model's state: parameters, buffers, then plain tensor attributes.

    Plain attributes (``self.h0 = torch.randn(...)`` in ``__init__``) are state like buffers, but
    ``.to(device)`` does not move them; left unlifted they reach the trace as meta tensors."""
    named = list(model.named_parameters()) + list(model.named_buffers())
    seen = {id(t) for _, t in named}
    for prefix, m in model.named_modules():
        for attr, v in vars(m).items():
            if isinstance(v, torch.Tensor) and id(v) not in seen:
                seen.add(id(v))
                named.append((f"{prefix}.{attr}" if prefix else attr, v))
    return [n for n, _ in named], [t for _, t in named]


def _get_state(model, name: str):
    prefix, _, attr = name.rpartition(".")
    return getattr(model.get_submodule(prefix) if prefix else model, attr)


def propagate_meta(gm: fx.GraphModule) -> fx.GraphModule:
    """(Re)compute every node's ``meta['val']`` from the placeholders' fake values."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    vals = [n.meta.get("val") for n in phs]
    mode = next((v.fake_mode for v in vals if hasattr(v, "fake_mode")), None)
    if mode is None:
        mode = _fake_mode()
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*vals)
    return gm


# ATen ops one trace may record. KernelBench graphs have at most ~1.5k nodes; past this the forward
# is unrolled (a Python loop over time steps, or an RNN op that the target has no fused kernel for
# and decomposes per step): tens of thousands of nodes whose trace and rewrites take minutes and
# whose candidate would be megabytes of source. Stop early instead.
MAX_TRACE_OPS = 10_000


def _op_budget(limit: int):
    """A dispatch mode that raises TraceError after ``limit`` ATen ops."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpBudget(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.left = limit

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.left -= 1
            if self.left < 0:
                raise TraceError(f"graph too large: over {limit} ATen ops (an unrolled loop?)")
            return func(*args, **(kwargs or {}))
    return OpBudget()


def _trace_module(task: Task, device: torch.device) -> Traced:
    mod = task.load()
    if not hasattr(mod, "Model"):
        raise TraceError("task defines no Model")
    with torch.no_grad():
        model = _build_model(mod)
        inputs = _meta_inputs(mod)
    names, tensors = _state_tensors(model)
    n_params = len(list(model.parameters()))
    n_lifted = n_params + len(list(model.buffers()))
    mode = _fake_mode()
    fake = _faker(mode, device)
    # Parameters and buffers follow the model to ``device``; plain attributes stay where __init__
    # made them (meta stands for the default device, the CPU), as ``Model(..).to(device)`` leaves
    # them: a forward that moves them (``self.h0.to(x.device)``) keeps that copy in the graph.
    state = [fake(t.detach()) if i < n_lifted else
             _faker(mode, torch.device("cpu") if t.device.type == "meta" else t.device)(t.detach())
             for i, t in enumerate(tensors)]
    fins = [fake(x.detach()) if isinstance(x, torch.Tensor) else x for x in inputs]
    spec_box: dict = {}

    def flat_forward(*flat):
        sd = dict(zip(names, flat[: len(names)]))
        after: list = []

        def read_state(*_):
            # While functional_call still has the state swapped in: a forward that reassigns an
            # attribute (``self.hidden = tanh(..)``) changes what the next call sees.
            after[:] = [_get_state(model, n) for n in names]
        hook = model.register_forward_hook(read_state)
        try:
            with _op_budget(MAX_TRACE_OPS):
                out = torch.func.functional_call(model, sd, tuple(flat[len(names):]))
        finally:
            hook.remove()
        leaves, spec = pytree.tree_flatten(out)
        if not all(isinstance(x, torch.Tensor) for x in leaves):
            raise TraceError("Model.forward returns non-tensor values")
        updates = [i for i, (a, b) in enumerate(zip(after, flat)) if a is not b]
        if any(not isinstance(after[i], torch.Tensor) or i < n_params for i in updates):
            raise TraceError("Model.forward replaces a parameter or sets state to a non-tensor")
        spec_box["spec"], spec_box["updates"] = spec, [names[i] for i in updates]
        return leaves + [after[i] for i in updates]

    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        with mode, torch.no_grad():
            gm = make_fx(torch.func.functionalize(flat_forward, remove="mutations"))(*state, *fins)
    except TraceError:
        raise
    except Exception as e:  # noqa: BLE001 - data-dependent control flow, unsupported ops, ...
        raise TraceError(f"make_fx failed: {type(e).__name__}: {str(e)[:300]}") from None
    try:
        # The candidate rebuilds the output from this text: a container type pytree cannot name
        # (``torch.return_types.max``, a user's namedtuple) has no such form.
        spec = pytree.treespec_dumps(spec_box["spec"])
    except Exception as e:  # noqa: BLE001
        raise TraceError(f"output structure cannot be serialised: {type(e).__name__}") from None
    _inline_constants(gm)
    try:
        with mode, torch.no_grad():   # the forward run as the reference runs it: no tracer
            eager = flat_forward(*state, *fins)
    except Exception:  # noqa: BLE001 - the traced layouts stand
        eager = None
    if eager is not None:
        _contiguous_as_eager(gm, eager)
    # Static shapes: a forward input that is not a tensor was specialised into the graph.
    return Traced(gm=gm, state_names=names, state_updates=spec_box["updates"],
                  out_spec=spec, input_meta=_input_meta(inputs))


def _contiguous_as_eager(gm: fx.GraphModule, eager: list) -> int:
    """Outputs that the traced code lays out otherwise than the module run eagerly, where that
    is contiguous, made contiguous: eager takes fast paths a tracer does not
    (``nn.MultiheadAttention``'s fused kernel returns batch-first contiguous, its traced ops a
    transpose), and callers (and the verifier) hold the output to eager's layout."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = list(out.args[0])
    if len(leaves) != len(eager):
        return 0
    count = 0
    for i, (x, e) in enumerate(zip(leaves, eager)):
        v = x.meta.get("val") if isinstance(x, fx.Node) else None
        if isinstance(v, torch.Tensor) and isinstance(e, torch.Tensor) and e.is_contiguous() \
                and not v.is_contiguous():
            with gm.graph.inserting_before(out):
                c = gm.graph.call_function(torch.ops.aten.clone.default, (x,),
                                           {"memory_format": torch.contiguous_format})
            c.meta["val"] = v.contiguous()
            leaves[i] = c
            count += 1
    if count:
        out.args = (type(out.args[0])(leaves),) + tuple(out.args[1:])
        gm.recompile()
    return count


_CONSTANT_LIMIT = 4096   # elements: larger constants would bloat the candidate's source


def _inline_constants(gm: fx.GraphModule) -> None:
    """Tensors the forward built from Python data (``torch.tensor(0.0)``) are ``get_attr``
    constants after make_fx; small ones become ``torch.tensor(<literal>)`` calls so that the
    graph renders as standalone source and the rewrites can see their values."""
    for n in list(gm.graph.nodes):
        if n.op != "get_attr":
            continue
        value = gm
        for part in n.target.split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor) or value.numel() > _CONSTANT_LIMIT \
                or value.device.type == "meta" or type(value) is not torch.Tensor:
            raise TraceError(f"constant {n.target} cannot be inlined")
        with gm.graph.inserting_before(n):
            new = gm.graph.call_function(torch.tensor, (value.detach().cpu().tolist(),),
                                         {"dtype": value.dtype, "device": value.device})
        n.replace_all_uses_with(new)
        gm.graph.erase_node(n)
    gm.graph.lint()
    gm.recompile()
    propagate_meta(gm)


def _trace_graph(task: Task) -> Traced:
    gm = copy.deepcopy(task.graph)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if any(n.op == "get_attr" for n in gm.graph.nodes):
        raise TraceError("graph has get_attr nodes (constants not lifted)")
    inputs = task.real_inputs
    if inputs is None:
        inputs = list(task.load().get_inputs())
    if len(inputs) != len(phs):
        raise TraceError(f"{len(phs)} placeholders but {len(inputs)} inputs")
    mode = _fake_mode()
    for n, x in zip(phs, inputs):
        n.meta["val"] = mode.from_tensor(x) if isinstance(x, torch.Tensor) else x
    try:
        propagate_meta(gm)
    except Exception as e:  # noqa: BLE001
        raise TraceError(f"fake propagation failed: {type(e).__name__}: {str(e)[:300]}") from None
    return Traced(gm=gm, input_meta=_input_meta(inputs), from_task_graph=True)


# make_fx patches module-level state of torch.fx while it traces (CURRENT_PATCHER): two traces
# at once in one process (searches on threads: the KernelBench runner's jobs, background
# searches) break each other with "CURRENT_PATCHER is None", which cost a search its graph.
_TRACE_LOCK = threading.Lock()


def trace_task(task: Task, device: str = "cpu") -> Traced:
    """The functional ATen graph of ``task`` for ``device`` (raises TraceError)."""
    with _TRACE_LOCK:
        if task.graph is not None:
            return _trace_graph(task)
        dev = torch.device(device)
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", 0)
        return _trace_module(task, dev)


# ---------------------------------------------------------------------------------------------
# Rendering


_FN_TEMPLATE = '''

def _cudal1_make_graph_fn():
    # The graph's code needs these names; they live in this closure so that the task's own
    # module globals are left untouched.
    import math
    import torch
    import torch.fx._pytree as fx_pytree
    import torch.utils._pytree as pytree
    from torch import device
    inf, nan, NoneType = math.inf, math.nan, type(None)
{aliases}
{body}

    return forward


_cudal1_graph_fn = _cudal1_make_graph_fn()
'''

_CLASS_TEMPLATE = '''

import torch.utils._pytree as _cudal1_pytree  # noqa: E402

_CUDAL1_STATE = {state!r}
_CUDAL1_UPDATES = {updates!r}
_CUDAL1_INPUTS = {inputs!r}
_CUDAL1_OUT_SPEC = {spec}


class ModelNew(Model):
    """{doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cudal1_fn = {fn_expr}
        # (owner module, attribute) per state tensor: parameters, buffers and plain tensor
        # attributes alike. Submodules stay the same objects under .to(); their tensors do not.
        self._cudal1_slots = [self._cudal1_slot(n) for n in _CUDAL1_STATE]
        self._cudal1_update_slots = [self._cudal1_slot(n) for n in _CUDAL1_UPDATES]

    def _cudal1_slot(self, name):
        prefix, _, attr = name.rpartition(".")
        return (self.get_submodule(prefix) if prefix else self), attr

    def _cudal1_state(self):
        return [getattr(m, a) for m, a in self._cudal1_slots]

    def _cudal1_finish(self, out):
        # The graph returns the reassigned state after the outputs; assign it as forward did.
        out = list(out)
        k = len(out) - len(self._cudal1_update_slots)
        for (m, a), v in zip(self._cudal1_update_slots, out[k:]):
            setattr(m, a, v)
        return _cudal1_pytree.tree_unflatten(out[:k], _CUDAL1_OUT_SPEC)

    def _cudal1_matches(self, inputs):
        if len(inputs) != len(_CUDAL1_INPUTS):
            return False
        for x, m in zip(inputs, _CUDAL1_INPUTS):
            if m is None:
                continue
            if m[0] == "=":
                if isinstance(x, torch.Tensor) or x != m[1]:
                    return False
            elif not isinstance(x, torch.Tensor) or tuple(x.shape) != m[0] or str(x.dtype) != m[1]:
                return False
        return True

    def forward(self, *inputs):
        if not self._cudal1_matches(inputs):   # the graph is specialised to the traced shapes
            return Model.forward(self, *inputs)
        {call}
'''


def render_graph_fn(gm: fx.GraphModule) -> str:
    """Module-level source defining ``_cudal1_graph_fn(self, *placeholders)``."""
    if any(n.op in ("get_attr", "call_module") for n in gm.graph.nodes):
        raise TraceError("graph has get_attr/call_module nodes")
    code = gm.graph.python_code("self")
    from .render import UnsupportedGraph, _global_lines
    try:
        aliases = "".join(_global_lines(code.globals, "graph code"))
    except UnsupportedGraph as e:
        raise TraceError(str(e)) from None
    body = "\n".join("    " + line if line.strip() else "" for line in code.src.strip("\n").splitlines())
    src = _FN_TEMPLATE.format(body=body.rstrip(), aliases="".join(
        "    " + ln + "\n" for ln in aliases.splitlines()))
    if any(getattr(n.target, "namespace", None) == "cudal1" for n in gm.graph.nodes):
        # the graph calls a template (torch.ops.cudal1.*): registered on import
        src = "\nimport torch_cudal1.templates  # noqa: E402,F401\n" + src
    return src


def render_candidate_source(task: Task, traced: Traced, gm: fx.GraphModule, *,
                            compile_mode: str | None = None, doc: str = "") -> str:
    """``task.source`` + a ``ModelNew(Model)`` that runs ``gm`` (eagerly, or through
    ``torch.compile`` when ``compile_mode`` is given: "default", "max-autotune-no-cudagraphs", ...)."""
    fn = render_graph_fn(gm)
    if compile_mode is None:
        fn_expr = "_cudal1_graph_fn"
    elif compile_mode == "default":
        fn_expr = "torch.compile(_cudal1_graph_fn)"
    else:
        fn_expr = f"torch.compile(_cudal1_graph_fn, mode={compile_mode!r})"
    if traced.from_task_graph:
        call = "return self._cudal1_fn(None, *inputs)"
    else:
        call = "return self._cudal1_finish(self._cudal1_fn(None, *self._cudal1_state(), *inputs))"
    inputs = list(traced.input_meta)
    spec = "None" if traced.out_spec is None else f"_cudal1_pytree.treespec_loads({traced.out_spec!r})"
    cls = _CLASS_TEMPLATE.format(state=list(traced.state_names), updates=list(traced.state_updates),
                                 inputs=inputs, spec=spec,
                                 doc=doc or "cudal1 built-in: the task's ATen graph, rewritten",
                                 fn_expr=fn_expr, call=call)
    return task.source.rstrip() + "\n\nimport torch  # noqa: E402\n" + fn + cls
