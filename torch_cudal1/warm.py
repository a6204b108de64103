"""Warming a cache before serving: the unit of work, shared by ``cudal1 warm`` and Ray warming.

A *recipe* is a Python file with ``def models()`` yielding ``(name, model, [input_set, ...])``:

* ``model``: an ``nn.Module``, or a zero-argument callable returning one (built only when one of
  its units runs: listing a recipe stays cheap);
* ``input_set``: the positional arguments of one call (a tuple or list; a single tensor; or a
  dict of keyword arguments), or a zero-argument callable returning one. One unit per input set:
  the shapes to serve (batch sizes, sequence lengths).

Optional module attributes: ``OPTIONS`` (dict, backend options for this recipe; the caller's
options win) and ``DYNAMIC`` (``None``: torch's default automatic dynamic shapes, ``True`` or
``False``: what the serving process passes as ``torch.compile(dynamic=...)``; keys depend on it).

A KernelBench task file (``class Model``, ``get_inputs``, ``get_init_inputs``), or a folder of
them, is a recipe too: one unit per file, ``Model(*get_init_inputs())`` on ``get_inputs()``.

``list_units(path)`` and ``warm_unit(unit, options, device)`` are the stable API (Ray warming in
``torch_cudal1.distributed`` builds on exactly these two).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WarmUnit:
    recipe: str          # absolute path of the recipe or task file
    model: str           # model name within the recipe (a task file: its stem)
    index: int           # input-set index
    description: str     # e.g. "bert[1]: (8, 128) int64"
    kind: str = "recipe"  # "recipe" | "task"

    @property
    def id(self) -> str:
        return f"{self.recipe}::{self.model}::{self.index}"


# -- loading recipes -------------------------------------------------------------------------
_MODULES: dict = {}


def _load(path: Path):
    """Import a recipe or task file once per process (keyed by path and modification time)."""
    st = path.stat()
    cache_key = (str(path), st.st_mtime_ns, st.st_size)
    mod = _MODULES.get(cache_key)
    if mod is None:
        name = "cudal1_recipe_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, str(path))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        sys.path.insert(0, str(path.parent))   # recipes may import their neighbours
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(str(path.parent))
        _MODULES[cache_key] = mod
    return mod


def _is_task(mod) -> bool:
    return all(hasattr(mod, n) for n in ("Model", "get_inputs", "get_init_inputs"))


def _resolve(x):
    return x() if callable(x) and not _is_module(x) else x


def _is_module(x) -> bool:
    import torch
    return isinstance(x, torch.nn.Module)


def _describe(input_set) -> str:
    import torch
    args = input_set.values() if isinstance(input_set, dict) else (
        [input_set] if isinstance(input_set, torch.Tensor) else input_set)
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            parts.append(f"{tuple(a.shape)} {str(a.dtype).replace('torch.', '')}")
        else:
            parts.append(repr(a)[:20])
    return ", ".join(parts)


def list_units(recipe_path: str | os.PathLike) -> list:
    """Every unit of a recipe file, a task file or a folder of task files, in order."""
    path = Path(recipe_path).resolve()
    if path.is_dir():
        units = []
        for f in sorted(path.glob("*.py")):
            if f.name.startswith("_"):
                continue
            units += list_units(f)
        return units
    if not path.is_file():
        raise FileNotFoundError(f"recipe {recipe_path} does not exist")
    mod = _load(path)
    if hasattr(mod, "models"):
        units = []
        for name, _model, sets in mod.models():
            sets = list(_resolve(sets))
            for i, s in enumerate(sets):
                units.append(WarmUnit(str(path), str(name), i, f"{name}[{i}]: {_describe(_resolve(s))}"))
        return units
    if _is_task(mod):
        return [WarmUnit(str(path), path.stem, 0, f"{path.stem}: KernelBench task", kind="task")]
    raise ValueError(f"{path}: neither a recipe (def models()) nor a KernelBench task")


def _materialize(unit: WarmUnit):
    """(module, model, [input sets], recipe options, dynamic) of a unit."""
    mod = _load(Path(unit.recipe))
    if unit.kind == "task":
        import torch
        torch.manual_seed(0)
        model = mod.Model(*mod.get_init_inputs())
        return model, [mod.get_inputs()], {}, getattr(mod, "DYNAMIC", False)
    for name, model, sets in mod.models():
        if str(name) == unit.model:
            sets = [_resolve(s) for s in _resolve(sets)]
            return _resolve(model), sets, dict(getattr(mod, "OPTIONS", {}) or {}), \
                getattr(mod, "DYNAMIC", None)
    raise KeyError(f"recipe {unit.recipe} has no model {unit.model!r} any more")


def to_device(x, device: str):
    """Tensors in ``x`` (nested tuples, lists, dicts) moved to ``device``; the rest as is."""
    import torch
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def _call(fn, input_set):
    import torch
    if isinstance(input_set, dict):
        return fn(**input_set)
    if isinstance(input_set, torch.Tensor):
        return fn(input_set)
    return fn(*input_set)


def varying_dims(sets: list) -> dict:
    """{argument position or name: [dims]} of tensor dims that differ between input sets: what
    torch's automatic dynamic shapes marks dynamic after a shape change."""
    import torch
    out: dict = {}
    if len(sets) < 2:
        return out
    items = [s.items() if isinstance(s, dict) else enumerate([s] if isinstance(s, torch.Tensor) else s)
             for s in sets]
    per = [dict(i) for i in items]
    for k, v in per[0].items():
        if not isinstance(v, torch.Tensor):
            continue
        dims = [d for d in range(v.dim())
                if any(isinstance(p.get(k), torch.Tensor) and p[k].dim() == v.dim()
                       and p[k].shape[d] != v.shape[d] for p in per[1:])]
        if dims:
            out[k] = dims
    return out


def _variants(dynamic, sets: list) -> list:
    """How to compile a unit so that its keys are the ones serving asks for. ``None``
    (automatic dynamic): the static graph (the first shape a server sees) and the graph with the
    varying dims dynamic (every later shape)."""
    if dynamic is None:
        return ["static", "auto"] if varying_dims(sets) else ["static"]
    return ["dynamic" if dynamic else "static"]


def compile_and_call(model, sets: list, index: int, options: dict, device: str, dynamic) -> None:
    """Compile ``model`` the way a fresh serving process would and call it on input set
    ``index`` under no_grad, once per variant of ``dynamic``."""
    import torch
    import torch._dynamo

    inputs = to_device(sets[index], device)
    for variant in _variants(dynamic, sets):
        torch._dynamo.reset()    # fresh-process semantics: no automatic dynamic from earlier calls
        args = inputs
        if variant == "auto":
            args = to_device(sets[index], device)
            for k, dims in varying_dims(sets).items():
                t = args[k] if not isinstance(args, torch.Tensor) else args
                for d in dims:
                    torch._dynamo.maybe_mark_dynamic(t, d)
        compiled = torch.compile(model, backend="cudal1", options=options,
                                 dynamic={"static": False, "dynamic": True, "auto": None}[variant])
        with torch.no_grad():
            _call(compiled, args)


def warm_unit(unit: WarmUnit, options: dict, device: str) -> dict:
    """Compile the unit's model with backend cudal1 and call it once under no_grad: every graph
    is looked up and searched on a miss. Returns {unit, keys, hits, misses, searches, fallbacks,
    seconds}."""
    from . import counters
    t0 = time.monotonic()
    model, sets, recipe_opts, dynamic = _materialize(unit)
    opts = dict(recipe_opts, **(options or {}))
    opts["mode"] = opts.get("mode") if opts.get("mode") in ("search", "cache-only") else "search"
    opts["new_shapes"] = "search"   # warming searches every size it names, inside the call
    opts["foreground_budget_s"] = float("inf")   # ... however long its searches take in all
    model = model.to(device).eval()
    seen, stats = len(counters.SEEN_KEYS), dict(counters.STATS)
    compile_and_call(model, sets, unit.index, opts, device, dynamic)
    new = counters.SEEN_KEYS[seen:]

    def delta(name: str) -> int:
        return counters.STATS.get(name, 0) - stats.get(name, 0)

    return {"unit": unit.description, "id": unit.id, "keys": [k["key"] for k in new],
            "hits": sum(1 for k in new if k["hit"]), "misses": sum(1 for k in new if not k["hit"]),
            "searches": delta("searches"), "fallbacks": delta("fallbacks"),
            "seconds": round(time.monotonic() - t0, 3), "pid": os.getpid(), "device": device,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def peek_unit(unit: WarmUnit, options: dict, device: str) -> list[dict]:
    """The keys (with their fields) a unit asks for, without loading or searching anything."""
    from . import counters
    from .serve.graph_runner import PEEK
    model, sets, recipe_opts, dynamic = _materialize(unit)
    opts = dict(recipe_opts, **(options or {}), fallback="eager")
    seen = len(counters.SEEN_KEYS)
    PEEK.active = True
    try:
        compile_and_call(model.to(device).eval(), sets, unit.index, opts, device, dynamic)
    finally:
        PEEK.active = False
    return counters.SEEN_KEYS[seen:]
