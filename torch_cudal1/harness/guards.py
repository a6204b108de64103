"""Identity checks of process-wide functions (timers, RNG, comparisons, Tensor methods, the
task module's ``get_inputs`` the harness draws from) in the candidate's worker. Rebinding them
changes every caller in the process that serves the candidate, and is how a candidate would try
to steer the worker's own code: the snapshot is taken before the candidate is imported and
compared after its construction and after every batch of calls -> ``timer_tampering``. The judge,
in another process, does not depend on them.
"""
from __future__ import annotations

import builtins
import gc
import os
import types
import random
import statistics
import sys
import threading
import time

import numpy as np
import torch

_TORCH_FUNCS = ("allclose", "isclose", "equal", "manual_seed", "seed", "initial_seed",
                "get_rng_state", "set_rng_state", "randn", "rand", "randint", "randn_like",
                "rand_like", "empty", "empty_like", "zeros", "ones", "full", "isfinite", "isnan",
                "abs", "sub", "norm", "stack", "cat", "as_strided", "clone", "tensor", "is_tensor",
                "no_grad", "inference_mode", "from_numpy", "arange")
_TENSOR_METHODS = ("clone", "copy_", "cpu", "to", "double", "float", "detach", "numel", "data_ptr",
                   "abs", "sub", "__sub__", "__eq__", "__ne__", "__lt__", "__gt__", "__le__", "__ge__",
                   "norm", "isfinite", "isnan", "item", "tolist", "any", "all", "sum", "max", "min",
                   "contiguous", "stride", "size", "dim", "equal", "allclose", "untyped_storage",
                   "storage_offset", "is_contiguous", "nan_to_num", "__getitem__", "__setitem__",
                   "__len__", "__bool__", "__float__", "view", "reshape", "flatten", "fill_", "zero_",
                   "__torch_function__", "__repr__", "__format__", "element_size", "numpy",
                   "__deepcopy__", "requires_grad_", "normal_", "uniform_", "random_")
_TENSOR_PROPERTIES = ("shape", "dtype", "device", "is_cuda", "data", "_version", "is_sparse",
                      "layout", "requires_grad")
_CUDA_FUNCS = ("synchronize", "Event", "Stream", "current_stream", "default_stream", "manual_seed",
               "manual_seed_all", "seed", "get_rng_state", "set_rng_state", "is_available",
               "empty_cache", "memory_allocated", "stream", "device_count", "CUDAGraph", "graph")
_EVENT_METHODS = ("record", "elapsed_time", "synchronize", "query", "wait", "__init__", "__new__")
_MODULE_FUNCS = {
    time: ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
           "process_time", "sleep"),
    random: ("seed", "random", "getrandbits", "randrange", "SystemRandom", "getstate", "setstate"),
    os: ("urandom", "getpid", "_exit", "replace", "write", "fsync"),
    np: ("copyto", "uint64", "uint8", "frombuffer", "ndarray", "arange"),   # fingerprints, copies
    statistics: ("median", "quantiles", "mean"),
    threading: ("active_count", "enumerate", "Thread"),
    builtins: ("isinstance", "type", "len", "abs", "max", "min", "sum", "sorted", "float", "int",
               "open", "print", "getattr", "setattr", "hasattr", "id", "iter", "next", "zip",
               "range", "repr", "str", "list", "dict", "tuple", "any", "all", "round"),
}
# The name the worker loads the task under (``worker._serve``).
TASK_MODULE = "cudal1_task"
_HARNESS_MODULES = ("torch_cudal1.harness.calls", "torch_cudal1.harness.protocol",
                    "torch_cudal1.harness.guards", "torch_cudal1.harness.audit",
                    "torch_cudal1.harness.state", "torch_cudal1.harness.worker", "json")
# Modules the worker took out of ``sys.modules`` before the candidate's import (``worker.hide``):
# name -> module. Looked up here, not in ``sys.modules``, so that the snapshot's view of them is
# the same before and after, and a module the candidate puts under one of their names changes
# nothing the harness runs (it holds its own references).
HIDDEN: dict = {}


def module(name: str):
    """The module loaded under ``name``: one the worker hid, else ``sys.modules``'s."""
    return HIDDEN[name] if name in HIDDEN else sys.modules.get(name)


def _attrs(owner, names):
    out = {}
    for n in names:
        try:
            out[n] = owner.__dict__[n] if isinstance(owner, type) and n in owner.__dict__ \
                else getattr(owner, n)
        except Exception:  # noqa: BLE001 - missing on this build (e.g. no CUDA)
            continue
    return out


def snapshot() -> dict:
    """Map "owner.name" -> object. Modules are fetched through sys.modules so that replacing a
    module object is caught too."""
    snap: dict = {}
    for n, v in _attrs(torch, _TORCH_FUNCS).items():
        snap[f"torch.{n}"] = v
    for n, v in _attrs(torch.Tensor, _TENSOR_METHODS + _TENSOR_PROPERTIES).items():
        snap[f"torch.Tensor.{n}"] = v
    for n, v in _attrs(torch._C.TensorBase, _TENSOR_METHODS + _TENSOR_PROPERTIES).items():
        snap[f"torch._C.TensorBase.{n}"] = v
    snap["torch.Tensor"] = torch.Tensor
    snap["torch.testing.assert_close"] = torch.testing.assert_close
    for n, v in _attrs(torch.cuda, _CUDA_FUNCS).items():
        snap[f"torch.cuda.{n}"] = v
    for n, v in _attrs(torch.cuda.Event, _EVENT_METHODS).items():
        snap[f"torch.cuda.Event.{n}"] = v
    for mod, names in _MODULE_FUNCS.items():
        for n, v in _attrs(mod, names).items():
            snap[f"{mod.__name__}.{n}"] = v
    for name in ("torch", "torch.cuda", "time", "random", "os", "json", "threading", "builtins"):
        snap[f"sys.modules[{name}]"] = sys.modules.get(name)
    # The task module the harness draws every call's inputs from (``calls.Inputs``): its
    # get_inputs rebound runs the candidate's code inside the untimed draw.
    task = module(TASK_MODULE)
    snap[f"sys.modules[{TASK_MODULE}]"] = task
    snap.update(reach(task if type(task) is types.ModuleType else None))
    snap.update(hooks())
    for name in _HARNESS_MODULES:
        mod = module(name)
        if mod is None:
            continue
        snap[f"sys.modules[{name}]"] = mod
        for k, v in list(vars(mod).items()):
            if (callable(v) or isinstance(v, type(os))) and not k.startswith("__"):
                snap[f"{name}.{k}"] = v
                if isinstance(v, type) and v.__module__ == mod.__name__:
                    for m, f in list(vars(v).items()):
                        if callable(f) or isinstance(f, (staticmethod, classmethod, property)):
                            snap[f"{name}.{k}.{m}"] = f
    return snap


# What any model's forward calls through: rebound (say ``torch.diag = ...`` at import), every
# other model in the serving process would compute something else.
_REACH_MODULES = ("torch", "torch.nn.functional", "torch._C._nn", "torch.linalg", "torch.fft",
                  "torch.special")
# Rebound by torch itself: on Dynamo's import (``snapshot`` watches it, taken after that import)
# and, for generation tagging, on a first compile (construction is done by then).
_REBOUND_BY_TORCH = ("torch.manual_seed", "torch.nn.modules.module.Module.__init__",
                     "torch.nn.modules.module.Module.__setstate__")


# Hooks every module's forward runs, the reference's too (``register_module_forward_pre_hook``).
_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_forward_hooks_always_called")


class _Contents(tuple):
    """A registry's contents (ids), compared by value: an added entry counts as a change."""


def _callables(prefix: str, namespace: dict, snap: dict) -> None:
    for k, v in list(namespace.items()):
        if (callable(v) or isinstance(v, (staticmethod, classmethod, property))) \
                and not isinstance(v, types.ModuleType):
            snap[f"{prefix}.{k}"] = v


def reach(task_module=None) -> dict:
    """Map "owner.name" -> object for what a model's forward reaches: torch's functional
    namespaces, Tensor's methods, every ``nn.Module`` class's methods, the global module hooks,
    the ATen operators loaded so far (an FX graph's ``torch.ops.aten.X.default``) and, given one,
    a module's functions, classes (their methods) and the modules it imported."""
    snap: dict = {}
    for name in _REACH_MODULES:
        mod = sys.modules.get(name)
        if mod is not None:
            _callables(name, vars(mod), snap)
    for cls in (torch.Tensor, torch._C.TensorBase):
        for k, v in list(vars(cls).items()):
            snap[f"{cls.__module__}.{cls.__name__}.{k}"] = v
    for name, mod in list(sys.modules.items()):
        if name.startswith("torch.nn.modules.") and mod is not None:
            for k, c in list(vars(mod).items()):
                if isinstance(c, type) and issubclass(c, torch.nn.Module) and c.__module__ == name:
                    _callables(f"{name}.{k}", vars(c), snap)
    registry = sys.modules["torch.nn.modules.module"]
    for name in _GLOBAL_HOOKS:
        hooks = getattr(registry, name, None)
        if isinstance(hooks, dict):
            snap[f"torch.nn.modules.module.{name}"] = _Contents(
                (k, id(v)) for k, v in hooks.items())
    for k, packet in list(vars(torch.ops.aten).items()):
        if isinstance(packet, torch._ops.OpOverloadPacket):
            snap[f"torch.ops.aten.{k}"] = packet
            for o, op in list(vars(packet).items()):
                if isinstance(op, torch._ops.OpOverload):
                    snap[f"torch.ops.aten.{k}.{o}"] = op
    if task_module is not None:
        name = task_module.__name__
        _callables(name, vars(task_module), snap)
        for k, v in list(vars(task_module).items()):   # ``torch`` as its get_inputs looks it up
            if isinstance(v, types.ModuleType):
                snap[f"{name}.{k}"] = v
        for k, c in list(vars(task_module).items()):
            if isinstance(c, type) and c.__module__ == name:
                _callables(f"{name}.{k}", vars(c), snap)
    for k in _REBOUND_BY_TORCH:
        snap.pop(k, None)
    return snap


# -- hooks into the harness's own work -------------------------------------------------------------
# Torch function and dispatch modes, kernels of ATen operators, gc callbacks and the dispatcher's
# thread-local keys each run the candidate's code inside the torch calls the harness itself makes:
# reading, copying and fingerprinting a call's outputs after its timer stopped, drawing the next
# inputs. Work done there (the answer computed as the harness first touches it) is never timed.
# The keys whose kernels a dense CPU or CUDA tensor's op runs through (not Meta: tracing
# libraries register Python meta kernels on import, and a real tensor never calls them).
_KERNEL_KEYS = frozenset((
    "CPU", "CUDA", "BackendSelect", "ADInplaceOrView", "Autograd", "AutogradCPU", "AutogradCUDA",
    "AutogradOther", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional", "AutocastCPU", "AutocastCUDA", "Conjugate",
    "Negative", "ZeroTensor", "Python", "PythonDispatcher", "PythonTLSSnapshot"))


def _kernels(op: str) -> int:
    lines = torch._C._dispatch_dump(op).splitlines()
    return hash("\n".join(x for x in lines if x.split(":", 1)[0].split(" ", 1)[0] in _KERNEL_KEYS))


def _modes() -> tuple:
    fn = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
    dis = [torch._C._get_dispatch_stack_at(i) for i in range(torch._C._len_torch_dispatch_stack())]
    infra = [torch._C._get_dispatch_mode(k) for k in torch._C._TorchDispatchModeKey.__members__.values()]
    return tuple(type(m).__name__ for m in fn + dis + infra if m is not None)


def _tls() -> tuple:
    return (str(torch._C._dispatch_tls_local_include_set()),
            str(torch._C._dispatch_tls_local_exclude_set()))


def hooks() -> dict:
    """Map name -> _Contents for what would run code inside the harness's torch calls: the modes
    on torch's stacks, gc's callbacks, the kernels of every ATen operator (a
    ``torch.library.Library("aten", "IMPL")`` override shows as a change of its operator's)."""
    snap = {"torch's mode stacks": _Contents(_modes()),
            "gc.callbacks": _Contents(id(c) for c in gc.callbacks),
            "signal handlers": _Contents(_signal_handlers())}
    for op in torch._C._dispatch_get_all_op_names():
        if op.startswith("aten::"):
            snap[f"the kernels of {op}"] = _Contents((_kernels(op),))
    return snap


def _signal_handlers() -> list:
    """(signal, id of its Python handler) for every signal with one: a handler is handed the
    frame it interrupts."""
    import signal
    out = []
    for sig in signal.valid_signals():
        try:
            h = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
        if callable(h):
            out.append((int(sig), id(h)))
    return out


def call_hooks() -> tuple:
    """What a call could leave behind for the harness's next torch calls, cheaply read: compared
    right after every call returns (``disarm``)."""
    return _modes(), tuple(gc.callbacks), _tls()


def disarm(before: tuple) -> list[str]:
    """What of ``call_hooks()`` differs from ``before`` now that a call returned, named; modes and
    gc callbacks it added are taken off, so the harness's own work that follows runs none of it."""
    modes, callbacks, tls = call_hooks()
    left = []
    if modes != before[0]:
        left.append(f"torch modes {list(modes)}")
        while torch._C._len_torch_function_stack() > 0:
            torch._C._pop_torch_function_stack()
        while torch._C._len_torch_dispatch_stack() > 0:
            torch._C._pop_torch_dispatch_stack()
    if callbacks != before[1]:
        left.append("gc callbacks")
        gc.callbacks[:] = before[1]
    if tls != before[2]:
        left.append(f"dispatch keys {tls}")
    return left


def changed(before: dict) -> list[str]:
    """Names whose object is no longer the one in ``before`` (a ``snapshot()``), and the hidden
    modules loaded again (``reimported``)."""
    now = snapshot()
    return [k for k, v in before.items()
            if (now.get(k) != v if isinstance(v, _Contents) else now.get(k, _MISSING) is not v)] \
        + reimported()


def reimported() -> list[str]:
    """The modules the worker hid (``HIDDEN``) that are in ``sys.modules`` again: candidate code
    imported the harness's, the verifier's or the task's own module to reach what the harness
    runs. It gets a second copy, which the harness does not run; nothing honest imports them."""
    return [f"sys.modules[{n}] (imported again: the harness's own module)" for n in HIDDEN
            if n in sys.modules]


_MISSING = object()


class Frozen:
    """A module's attributes as they are now, its own submodules' too (``torch.cuda``), to
    ``depth`` levels; an attribute it gains later (a lazily loaded ``torch._dynamo``) is looked
    up in the module itself."""

    def __init__(self, module, depth: int = 1):
        own = dict(vars(module))
        prefix = module.__name__ + "."
        if depth:
            for k, v in own.items():
                if isinstance(v, types.ModuleType) and str(getattr(v, "__name__", "")).startswith(
                        prefix):
                    own[k] = Frozen(v, depth - 1)
        self.__dict__.update(own)
        self.__dict__["_cudal1_module"] = module

    def __getattr__(self, name):
        return getattr(self.__dict__["_cudal1_module"], name)


def private(module, freeze: bool = True) -> dict:
    """``module``'s functions and plain classes as copies that look up their globals in a private
    copy of its namespace, taken now: replacing one of its functions or methods later (through
    ``sys.modules``), even for one call and put back before the next check, leaves the copies as
    they were. With ``freeze``, the modules it uses (``np``, ``torch``, ``time``) and the
    builtins are this moment's too (``Frozen``): ``numpy.copyto`` or ``builtins.type`` swapped
    during a call, for the harness's first use after it, runs nothing. (This module's own copies
    are not frozen: its checks read what is in place now.) The copies are reached only through
    the worker's own frame, which candidate code may not take (``audit.py``)."""
    ns = dict(vars(module))
    path = module.__file__
    if freeze:
        for k, v in list(ns.items()):
            if isinstance(v, types.ModuleType):
                ns[k] = Frozen(v)
        ns["__builtins__"] = dict(vars(builtins))

    def copy(f):
        g = types.FunctionType(f.__code__, ns, f.__name__, f.__defaults__, f.__closure__)
        g.__kwdefaults__ = f.__kwdefaults__   # keyword-only defaults are not the constructor's
        return g

    for k, v in list(ns.items()):
        if isinstance(v, types.FunctionType) and v.__code__.co_filename == path:
            ns[k] = copy(v)
        elif isinstance(v, type) and v.__module__ == module.__name__ and v.__bases__ == (object,):
            body = {m: copy(f) if isinstance(f, types.FunctionType) else f
                    for m, f in vars(v).items() if m not in ("__dict__", "__weakref__")}
            ns[k] = type(v.__name__, v.__bases__, body)
    return ns


def sealed() -> dict:
    """This module's functions as private copies (``private``): replacing ``guards.changed`` or a
    helper it calls after this changes nothing they run, and the replacement itself shows in
    their next check (this module's functions are in the snapshot)."""
    return private(module(__name__), freeze=False)


# Classes whose methods the harness calls on its own objects right after a candidate's call, in
# the worker: tensors and their storages, CUDA events, the autograd modes' context managers,
# threads. A method set on one of them during a call (``torch.Tensor.copy_ = ...``, shadowing
# the C method) would run when the harness copies the outputs, after the call's timer stopped,
# and could put itself back before the batch's check: they are compared before and right after
# every call instead (``classes_changed``), cheaply, by identity.
_IMMUTABLE_TYPE = 1 << 8   # Py_TPFLAGS_IMMUTABLETYPE: attributes cannot be set (TensorBase)


def class_state() -> list:
    """(name, live dict, size, items) of every mutable class in the watched classes' MROs."""
    roots = [torch.Tensor, torch.UntypedStorage, torch.no_grad, torch.inference_mode,
             threading.Thread, getattr(torch.cuda, "Event", object)]
    seen, out = set(), []
    for root in roots:
        for cls in root.__mro__:
            if cls is object or cls in seen or cls.__flags__ & _IMMUTABLE_TYPE:
                continue
            seen.add(cls)
            view = cls.__dict__
            out.append((f"{cls.__module__}.{cls.__qualname__}", view, len(view),
                        tuple(view.items())))
    return out


def classes_changed(state: list) -> list[str]:
    """The classes of ``class_state()`` whose attributes are no longer those it saw."""
    return [name for name, view, n, items in state
            if len(view) != n or not all(view.get(k, _MISSING) is v for k, v in items)]
