"""Batches of calls of a model: the same code for the judge's reference and the worker's candidate.

Every call, whatever it is for (a verification draw, a repeat, a timed call), does the same:

1. its inputs: a fresh draw of the task's ``get_inputs()`` under a seed the judge chose (made on
   the device, so a new draw per timed call costs little; widened where the judge names a
   ``scale``), the tensors of an earlier call again, or an earlier call's tensors refilled in
   place with a new draw;
2. the L2 cache flushed (GPU), the call timed (CUDA events on the current stream, or the CPU
   clock) under the autograd context the judge chose (``no_grad`` or ``inference_mode``), in the
   candidate's thread (``candidate_thread.py``: in the worker, the thread that runs this code is
   another, and none of its frames is under the candidate's);
3. its outputs copied, the moment it returns and ordered after its thread's current stream, into
   the call's slot of shared memory: what a caller reading them right away would see;
4. the device synchronised, then facts about the call written down for the judge: outputs that
   are not exact dense tensors, outputs that changed after the return (work left running),
   inputs changed by the call, where outputs live (memory shared between outputs), threads the
   candidate left running.

At the end of a batch: outputs that changed while later calls ran, process settings left changed
(functions rebound: a separate request, ``harness/worker.py``, so that its cost stays out of the
batches the judge times). The judge compares the slots with its own reference and decides; nothing
here is a verdict. Because every call does the same, a candidate cannot tell the calls that are
checked from the others: the judge checks any of them, chosen after the batch.
"""
from __future__ import annotations

import contextlib
import gc
import math
import mmap
import os
import threading
import time
import types

import numpy as np
import torch

# Imported here, not where they are used: the worker hides its own modules from the candidate
# (``worker.hide``), and an import statement run after that would load a second copy.
from ..bench.timing_cpus import timing_cpus
from . import guards
from .candidate_thread import Inline
from .errors import chain_text
from .protocol import layout
from .real_inputs import clone_layout

THREAD_GRACE_S = 0.05     # how long finished-looking outputs must stay unchanged
FLUSH_MIN_BYTES = 64 << 20
_now = time.perf_counter   # the call's clock, bound here (see ``sealed``)
# CUDA events' methods, bound here: a method set on ``torch.cuda.Event`` during a call would run
# as the harness records the call's end or reads its time
_event_record = getattr(getattr(torch.cuda, "Event", None), "record", None)
_event_elapsed = getattr(getattr(torch.cuda, "Event", None), "elapsed_time", None)
_event_wait = getattr(getattr(torch.cuda, "Event", None), "wait", None)
_CLASSES = guards.class_state()   # taken as the harness is imported, before any candidate
# gc's switches, bound here: collections are off from a call's return until its facts are written,
# so a gc callback it left cannot run (and take itself off) before ``guards.disarm`` sees it
_gc_on, _gc_off, _gc_is_on = gc.enable, gc.disable, gc.isenabled
_VALUES = (type(None), bool, int, float, str)


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, name.replace("torch.", ""))


def flatten(out) -> list:
    """A result's leaves, read through the base classes' own methods: a list, tuple or dict
    subclass's ``__iter__``, ``keys`` or ``__getitem__`` (or a key's ``__str__``) would run the
    candidate's code after its call's timer stopped, its work done as the harness reads it."""
    cls = type(out)
    if issubclass(cls, (list, tuple)):
        res = []
        for o in (list.__iter__(out) if issubclass(cls, list) else tuple.__iter__(out)):
            res.extend(flatten(o))
        return res
    if issubclass(cls, dict):
        keys = list(dict.keys(out))
        if all(type(k) in _VALUES for k in keys):
            return flatten([dict.__getitem__(out, k) for k in sorted(keys, key=str)])
    return [out]


def structure(out, top: bool = True) -> str:
    """The shape of a result's nesting, leaves as ``*``: ``*``, ``(*,*)``, ``{'a':*}`` (lists and
    plain tuples alike, a named tuple by its class's name), read through the base classes' own
    methods as ``flatten`` reads it. A result of one element in a list or tuple is that element
    (a graph's outputs come as a tuple, and the task rendered from it may return its one output
    bare)."""
    cls = type(out)
    if issubclass(cls, (list, tuple)):
        items = list(list.__iter__(out) if issubclass(cls, list) else tuple.__iter__(out))
        if top and len(items) == 1:
            return structure(items[0], False)
        # a named tuple (``torch.return_types.max``) by its name: a caller reads ``.values``
        named = type_name(out) if issubclass(cls, tuple) and cls is not tuple else ""
        return named + "(" + ",".join(structure(o, False) for o in items) + ")"
    if issubclass(cls, dict):
        keys = list(dict.keys(out))
        if all(type(k) in _VALUES for k in keys):
            return "{" + ",".join(f"{k!r}:{structure(dict.__getitem__(out, k), False)}"
                                  for k in sorted(keys, key=str)) + "}"
    return "*"


def type_name(o) -> str:
    """``module.qualname`` of ``o``'s class, read through ``type``'s own descriptors (a metaclass's
    ``__name__`` property is the candidate's code)."""
    cls = type(o)
    return f"{type.__dict__['__module__'].__get__(cls)}.{type.__dict__['__qualname__'].__get__(cls)}"


def fingerprint(t: torch.Tensor) -> int:
    """An exact integer over a tensor's values: its bytes in logical order summed as 64-bit words
    (wrapping), the tail bytes one by one. The same on any device, one pass at memory speed, and
    changed by any change a candidate would make by accident. Host tensors are summed by NumPy,
    on this thread alone: torch's parallel reductions wait on worker threads, which a busy host
    delays by milliseconds, and that noise would land in the harness's share of the wall time."""
    b = t.detach().contiguous().reshape(-1).view(torch.uint8)
    n = b.numel() // 8 * 8
    if b.device.type == "cpu":
        a = b.numpy()
        total = int(a[:n].view(np.uint64).sum(dtype=np.uint64)) if n else 0
        return total + int(a[n:].sum(dtype=np.uint64))
    total = int(b[:n].view(torch.int64).sum()) % (1 << 64) if n else 0
    if n < b.numel():
        total += int(b[n:].sum(dtype=torch.int64))
    return total


FP_BLOCK = 4096               # 64-bit words per row of ``placed_fingerprint``'s grid
_FP_COLS, _FP_TAIL = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F   # odd: the terms' weights apart
_U64 = (1 << 64) - 1


def placed_fingerprint(t: torch.Tensor) -> int:
    """``fingerprint`` that also sees where each value is: the 64-bit words laid out in rows of
    FP_BLOCK, each row's sum weighted by its index and each column's by its own (the last
    partial row's words by their own index). A plain sum keeps its value when a call moves an
    input's values around (a sort in place); this does not. About three times the plain sum's
    cost: it is taken of inputs, which a call must leave as they were."""
    b = t.detach().contiguous().reshape(-1).view(torch.uint8)
    return _fp_numpy(b) if b.device.type == "cpu" else _fp_torch(b)


def _fp_numpy(b: torch.Tensor) -> int:
    a = b.numpy()
    n = a.size // 8 * 8
    w = a[:n].view(np.uint64)
    rows = w.size // FP_BLOCK
    full = rows * FP_BLOCK
    grid = w[:full].reshape(rows, FP_BLOCK)

    def weighted(x) -> int:
        return int((x * np.arange(1, x.size + 1, dtype=np.uint64)).sum(dtype=np.uint64))
    by_row = weighted(grid.sum(axis=1, dtype=np.uint64)) if rows else 0
    by_col = weighted(grid.sum(axis=0, dtype=np.uint64)) if rows else 0
    tail = weighted(w[full:]) if w.size > full else 0
    return _fp_combine(by_row, by_col, tail, int(a[n:].sum(dtype=np.uint64)))


def _fp_torch(b: torch.Tensor) -> int:
    """``_fp_numpy``'s figure from the device's own reductions, read back in one copy."""
    n = b.numel() // 8 * 8
    w = b[:n].view(torch.int64)
    rows = w.numel() // FP_BLOCK
    full = rows * FP_BLOCK
    grid = w[:full].view(rows, FP_BLOCK)
    zero = torch.zeros((), dtype=torch.int64, device=b.device)

    def weighted(x):   # int64 arithmetic wraps as uint64's does
        if not x.numel():
            return zero
        return (x * torch.arange(1, x.numel() + 1, dtype=torch.int64, device=x.device)).sum()
    parts = torch.stack([weighted(grid.sum(1)) if rows else zero,
                         weighted(grid.sum(0)) if rows else zero, weighted(w[full:]),
                         b[n:].sum(dtype=torch.int64)]).tolist()
    return _fp_combine(*(v & _U64 for v in parts))


def _fp_combine(by_row: int, by_col: int, tail: int, rest: int) -> int:
    return (by_row + by_col * _FP_COLS + tail * _FP_TAIL + rest) & _U64


def is_dense(t) -> bool:
    if type(t) is not torch.Tensor:
        return False
    if t.device.type == "meta" or t.layout != torch.strided or t.is_nested:
        return False
    if t.is_neg() or t.is_conj():   # a negation or conjugation left to whoever reads it
        return False
    if t.numel() == 0:
        return True
    try:
        st = t.untyped_storage()
        if st.data_ptr() == 0 or st.nbytes() == 0:
            return False
        need = t.storage_offset() + sum((s - 1) * abs(d) for s, d in zip(t.shape, t.stride())) + 1
        return need * t.element_size() <= st.nbytes()
    except (RuntimeError, NotImplementedError):
        return False


def output_specs(outputs) -> list[dict | None]:
    """What a slot holds for each output: {"shape", "dtype", "nbytes"} per tensor, None else."""
    specs = []
    for o in flatten(outputs):
        if isinstance(o, torch.Tensor):
            specs.append({"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", ""),
                          "nbytes": o.numel() * o.element_size()})
        else:
            specs.append(None)
    return specs


class Slots:
    """``count`` slots of ``slot_bytes`` in a shared file (``fd``), as one host uint8 tensor;
    registered with CUDA (pinned) where possible, so device-to-slot copies are DMA.

    ``keep_fd=False`` (the candidate's process) maps the file through a descriptor of its own
    that is closed once mapped (``torch.from_file``): ``mmap.mmap`` keeps a duplicate of the
    descriptor for the mapping's life, and code in the process could find it in
    ``/proc/self/fd`` and rewrite a slot with ``os.pwrite`` after the harness copied a call's
    outputs there, the caller having been handed something else."""

    def __init__(self, fd: int, count: int, specs: list, device: str, keep_fd: bool = True):
        self.offsets, self.slot_bytes = layout(specs)
        self.specs, self.count = specs, count
        size = count * self.slot_bytes
        if keep_fd:
            self.mm = mmap.mmap(fd, size)
            self.buf = torch.frombuffer(self.mm, dtype=torch.uint8)
        else:
            self.mm = None
            self.buf = torch.empty(0, dtype=torch.uint8)
            if size:
                self.buf = torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=size,
                                           dtype=torch.uint8)
        self.pinned = False
        if str(device).startswith("cuda"):
            try:
                rc = torch.cuda.cudart().cudaHostRegister(self.buf.data_ptr(), self.buf.numel(), 0)
                self.pinned = int(getattr(rc, "value", rc)) == 0
            except Exception:  # noqa: BLE001 - pageable copies are slower, not wrong
                self.pinned = False

    def view(self, slot: int, i: int) -> torch.Tensor:
        s = self.specs[i]
        start = slot * self.slot_bytes + self.offsets[i]
        return self.buf[start:start + s["nbytes"]].view(dtype_of(s["dtype"])).view(s["shape"])

    def close(self) -> None:
        if self.pinned:
            try:
                torch.cuda.cudart().cudaHostUnregister(self.buf.data_ptr())
            except Exception:  # noqa: BLE001
                pass
        del self.buf
        if self.mm is None:   # unmapped with the last view of ``buf``
            return
        try:
            self.mm.close()
        except BufferError:   # views still alive: the mapping goes with the process
            pass


def seed_all(seed: int, device: str) -> None:
    """``torch.manual_seed(seed)`` without its cost per call: before CUDA is initialized,
    ``torch.manual_seed`` queues a lazy seeding per device kind and formats the caller's stack for
    each (about 2 ms a call, more than a small task's call). The CPU generator is seeded here, and
    the device's once CUDA is initialized (which a draw on it needs anyway)."""
    torch.default_generator.manual_seed(seed)
    if str(device).startswith("cuda"):
        torch.cuda.init()
        torch.cuda.manual_seed_all(seed)


def rng_state(device: str) -> tuple:
    """The global generators' states, the CPU's and the device's: a call that draws from them or
    reseeds them changes every later random draw of the program that serves it."""
    states = [torch.default_generator.get_state()]
    if str(device).startswith("cuda") and torch.cuda.is_initialized():
        states.append(torch.cuda.default_generators[torch.cuda.current_device()].get_state())
    return tuple(states)


def rng_moved(before: tuple, device: str) -> bool:
    after = rng_state(device)
    return len(after) != len(before) or not all(torch.equal(a, b) for a, b in zip(before, after))


class Inputs:
    """The task's inputs: a draw under a seed, made on the device (the task's ``get_inputs``
    under the device's default), or the real inputs of the first call."""

    def __init__(self, task_module, device: str, real: list | None = None):
        self.task, self.device, self.real_inputs = task_module, device, real

    def draw(self, seed: int, scale: float | None = None, only: int | None = None) -> list:
        """``get_inputs()`` under ``seed``; with ``scale``, its floating inputs (input ``only``
        alone, where given) multiplied by it (``widen``)."""
        seed_all(seed, self.device)
        with torch.device(self.device):
            xs = self.task.get_inputs()
        xs = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in xs]
        if scale is not None:
            widen(xs if only is None else [xs[only]], float(scale))
        return xs

    def real(self) -> list:
        return [clone_layout(x, self.device) if isinstance(x, torch.Tensor) else x
                for x in self.real_inputs]


def widen(xs: list, scale: float) -> int:
    """The floating tensors of a draw multiplied by ``scale`` in place (the judge's wide draw):
    values of a magnitude real activations reach and ``get_inputs``'s ``randn`` never does. Each
    memory is scaled once, whole, however many inputs view it (an expanded mask, one tensor
    passed twice); one that would leave its dtype's range stays as it was (a mask of
    ``finfo.min``), so that no input becomes infinite. Returns how many memories changed."""
    n, seen = 0, set()
    with torch.no_grad():
        for t in tensor_leaves(xs):
            if not (t.is_floating_point() or t.is_complex()) or not t.numel():
                continue
            st = t.untyped_storage()
            if (t.device, st.data_ptr()) in seen:
                continue
            seen.add((t.device, st.data_ptr()))
            whole = torch.empty(0, dtype=t.dtype, device=t.device).set_(
                st, 0, (st.nbytes() // t.element_size(),), (1,))
            top = float(whole.abs().max())
            if math.isfinite(top) and top * abs(scale) < torch.finfo(t.dtype).max:
                whole.mul_(scale)
                n += 1
    return n


def refill(buf: torch.Tensor, new: torch.Tensor) -> None:
    """``buf``'s values replaced by ``new``'s in place: the same address, shape and version
    counter. An input whose elements share memory (an expanded mask: stride 0) cannot be written
    element by element; its memory span is written from ``new``'s where the draw gave ``new`` the
    same layout, and left as it was otherwise (the judge and the worker both call this, so their
    buffers stay alike)."""
    if torch._debug_has_internal_overlap(buf) != 1:
        buf.data.copy_(new)
    elif new.stride() == buf.stride():
        n = 1 + sum((size - 1) * step for size, step in zip(buf.shape, buf.stride()))
        buf.data.as_strided((n,), (1,)).copy_(new.as_strided((n,), (1,)))


def refill_tree(buf, new, partial=None):
    """``refill`` of every tensor of an input (a tensor, or lists and tuples of them) from the
    same place in ``new``, in part (``mix``) where ``partial`` is a seed; tensors of another
    shape and values that are not tensors stay as they were. Returns ``buf``."""
    if isinstance(buf, torch.Tensor) and isinstance(new, torch.Tensor):
        if buf.shape == new.shape:
            refill(buf, new if partial is None else mix(buf, new, partial))
    elif type(buf) in (list, tuple) and type(new) is type(buf) and len(buf) == len(new):
        for b, f in zip(buf, new):
            refill_tree(b, f, partial)
    return buf


SNAPSHOT_BYTES = 1 << 30   # inputs' memory copied whole up to this much a call, else fingerprinted


def tensor_leaves(x) -> list:
    """The tensors of an input: itself, or those in its lists, tuples and dicts (subclasses such
    as ``nn.Parameter`` included)."""
    return [t for t in flatten(x) if isinstance(t, torch.Tensor)]


def _nesting(x) -> str:
    """An input's nesting with its containers' lengths: a list the call appends to changes it."""
    return structure(x, False)


def _storage_bytes(st) -> torch.Tensor:
    """A storage's bytes, all of them, as a 1-D uint8 tensor on its device."""
    return torch.empty(0, dtype=torch.uint8, device=st.device).set_(st)


class InputWatch:
    """What a call must leave as it found it: each input's tensors, where they live (storage,
    offset, strides, shape: ``set_`` gives a tensor other memory) and every byte of their
    storages, elements between a view's rows included (a sliced input's neighbours are the
    caller's too), copied before the call and compared exactly after it. Past SNAPSHOT_BYTES
    a call, storages are fingerprinted instead (``placed_fingerprint``). Inputs in ``skip`` (the
    ones the reference writes) are watched for their place only."""

    def __init__(self, xs: list, skip=()):
        self.skip = set(skip)
        # an input's class: one set to a subclass (``x.__class__ = Sub``) runs the candidate's
        # ``__torch_function__`` in the harness's own work on that tensor (its refills, these
        # checks), outside the timed call and around the facts
        self.types = [[type(t) for t in tensor_leaves(x)] for x in xs]
        self.places = [[(t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.stride()),
                         tuple(t.shape)) for t in tensor_leaves(x)] for x in xs]
        self.nesting = [_nesting(x) for x in xs]
        # (input index, storage, copy or fingerprint); memory a skipped input shares with
        # another (one tensor passed twice) is the skipped one's
        seen = {(str(t.untyped_storage().device), t.untyped_storage().data_ptr())
                for j in self.skip if j < len(xs) for t in tensor_leaves(xs[j])}
        self.stores = []
        for j, x in enumerate(xs):
            if j in self.skip:
                continue
            for t in tensor_leaves(x):
                st = t.untyped_storage()
                key = (str(st.device), st.data_ptr())
                if st.nbytes() and key not in seen:
                    seen.add(key)
                    self.stores.append([j, st, None])
        self.exact = sum(st.nbytes() for _, st, _ in self.stores) <= SNAPSHOT_BYTES
        for entry in self.stores:
            b = _storage_bytes(entry[1])
            if not self.exact:
                entry[2] = placed_fingerprint(b)
            elif b.device.type == "cpu":   # one thread, as fingerprint()
                entry[2] = b.numpy().copy()
            else:
                entry[2] = b.clone()

    def changed(self, xs: list) -> list[int]:
        """The inputs the call changed: their values, their memory's other bytes, or where
        they live."""
        # (what the reference writes may grow: a list appended to keeps its first tensors' classes)
        out = {j for j, x in enumerate(xs) if [type(t) for t in tensor_leaves(x)][
            :len(self.types[j]) if j in self.skip else None] != self.types[j]}
        out |= {j for j, x in enumerate(xs)
                if j not in out and _nesting(x) != self.nesting[j] and j not in self.skip}
        for j, x in enumerate(xs):
            if j in out:
                continue
            now = [(t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.stride()),
                    tuple(t.shape)) for t in tensor_leaves(x)]
            if j in self.skip:   # what the reference writes may grow (a list appended to)
                now = now[:len(self.places[j])]
            if now != self.places[j]:
                out.add(j)
        for j, st, before in self.stores:
            if j in out:
                continue
            b = _storage_bytes(st)
            if not self.exact:
                same = placed_fingerprint(b) == before
            elif b.device.type == "cpu":
                a = b.numpy()
                same = _bytes_equal(a, before)
            else:
                same = torch.equal(b, before)
            if not same:
                out.add(j)
        return sorted(out)


def _bytes_equal(a, b) -> bool:
    # ndarray's own (C) methods only: numpy's Python helpers (``array_equal``) look up their
    # module's functions as they run, which candidate code could swap for one use
    if a.size % 8 == 0:
        a, b = a.view(np.uint64), b.view(np.uint64)
    return a.shape == b.shape and bool((a == b).all())


def clone_tree(x):
    """A copy of an input: its tensors cloned, in lists and tuples of the same kinds."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if type(x) in (list, tuple):
        return type(x)(clone_tree(v) for v in x)
    return x


def restore_tree(x, saved) -> None:
    """``x`` as ``saved`` (``clone_tree``) holds it, in place: its tensors refilled, what a call
    appended to its lists taken off again."""
    if isinstance(x, torch.Tensor) and isinstance(saved, torch.Tensor):
        if x.shape == saved.shape:
            refill(x, saved)
    elif type(x) in (list, tuple) and type(saved) is type(x):
        if type(x) is list:
            del x[len(saved):]
        for a, b in zip(x, saved):
            restore_tree(a, b)


def _keep_one(sel: torch.Tensor, g: torch.Generator) -> None:
    """A refill in part leaves at least one slice as it was (a whole new draw is no refill)."""
    if sel.numel() > 1 and bool(sel.all()):
        sel[int(torch.randint(0, sel.numel(), (1,), generator=g))] = False


def mix(old: torch.Tensor, new: torch.Tensor, seed: int, fraction: float = 0.15) -> torch.Tensor:
    """``old`` with a random part replaced by ``new``'s values: about ``fraction`` of the slices
    along one of its dimensions longer than one, or, where ``old`` is symmetric in its last two
    dimensions, rows and the matching columns (so it stays symmetric). A cache keyed on an
    input's address and a few of its values misses such a change unless it happens to look
    where it was made. The dimension is drawn among them for floating tensors: slices along the
    first alone would change one value of every row each time, and a cache keyed on one column
    would never be found stale, though a caller updating a window of its buffer in place (a
    rolling cache) leaves that column as it was. Integer and boolean tensors (indices, offsets,
    masks, whose order along a row a kernel may rely on) keep whole samples: the first
    dimension."""
    if old.dim() == 0 or old.numel() == 0 or old.shape != new.shape:
        return new.clone()
    g = torch.Generator().manual_seed(int(seed))
    square = old.dim() >= 2 and old.shape[-1] == old.shape[-2] > 1
    if square and torch.equal(old, old.transpose(-1, -2)):
        n = old.shape[-1]
        sel = torch.rand(n, generator=g) < fraction
        sel[int(torch.randint(0, n, (1,), generator=g))] = True
        _keep_one(sel, g)
        m = sel[:, None] | sel[None, :]
    else:
        dims = [i for i, s in enumerate(old.shape) if s > 1] or [0]
        d = dims[0]
        if len(dims) > 1 and (old.is_floating_point() or old.is_complex()):
            d = dims[int(torch.randint(0, len(dims), (1,), generator=g))]
        n = old.shape[d]
        sel = torch.rand(n, generator=g) < fraction
        sel[int(torch.randint(0, n, (1,), generator=g))] = True
        _keep_one(sel, g)
        m = sel.view([n if i == d else 1 for i in range(old.dim())])
    return torch.where(m.to(old.device), new, old)


class L2Flush:
    def __init__(self, device: str):
        try:
            l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        except Exception:  # noqa: BLE001
            l2 = 0
        n = max(2 * l2, FLUSH_MIN_BYTES)
        self.buf = torch.empty(n // 4, dtype=torch.int32, device=device)
        self.i = 0

    def __call__(self) -> None:
        self.i += 1
        self.buf.fill_(self.i)


def _grad_context(name: str):
    if name == "inference":
        return torch.inference_mode()
    return torch.no_grad()


def _note_input_memory(metas: list, xs: list) -> None:
    """Mark each output whose storage is (part of) an input's with that input's index: the judge
    allows it where the reference's output is that input's memory too (a graph that returns its
    input or a view of it), and those outputs change when the harness refills the input."""
    spans = [(str(t.device), t.untyped_storage().data_ptr(),
              t.untyped_storage().data_ptr() + t.untyped_storage().nbytes(), j)
             for j, x in enumerate(xs) for t in tensor_leaves(x) if t.numel()]
    for m in metas:
        if not m.get("span"):
            continue
        a, b = m["span"]
        for dev, start, end, j in spans:
            if dev == m["device"] and a < end and start < b:
                m["input"] = j
                break


def call_model(model, xs: list, grad: str, start, end) -> tuple:
    """A call as it runs in the candidate's thread: timed (CUDA events recorded on this thread's
    stream, or the CPU clock), under the autograd context the judge chose. Returns the output, the
    CPU time, whether gc was collecting (it is off from the return until the facts are written,
    so a gc callback the call left cannot run, and take itself off, before ``guards.disarm``
    sees it), the hooks and modes it left (taken off: they are this thread's), and the threads
    that were running before it with whether it left a new one running."""
    before = threading.enumerate()
    with _grad_context(grad):
        hooks = guards.call_hooks()
        if start is not None:
            _event_record(start)
        t0 = _now()
        out = model(*xs)
        ms = (_now() - t0) * 1e3
        if end is not None:
            _event_record(end)
        collecting = _gc_is_on()
        _gc_off()
        left = guards.disarm(hooks)
    ids = {id(t) for t in before}
    started = any(id(t) not in ids for t in threading.enumerate())
    return out, ms, collecting, left, (before, started)


def left_running(before: list, own_file: str | None) -> list[str]:
    """The names of the threads the candidate's code started during a call and left running
    past a short join (read in its thread: a thread's methods may be the candidate's)."""
    ids = {id(t) for t in before}
    own = [t for t in threading.enumerate() if id(t) not in ids and t.is_alive()
           and _started_by(t, own_file)]
    for t in own:
        t.join(0.2)
    return [str.__str__(t.name) if isinstance(t.name, str) else "?" for t in own if t.is_alive()]


def _started_by(t: threading.Thread, own_file: str | None) -> bool:
    target = getattr(t, "_target", None) or getattr(type(t), "run", None)
    code = getattr(target, "__code__", None) or getattr(
        getattr(target, "__func__", None), "__code__", None)
    fn = getattr(code, "co_filename", "") or ""
    return bool(own_file) and (fn == own_file or not fn.startswith("/"))


def _restore(state) -> None:
    state.restore()


def settings_left(settings, switches) -> str:
    """What the candidate's code left changed of the process settings read before its import
    (``global_settings``), described; '' when nothing."""
    from .. import global_settings
    out = []
    if settings is not None:
        leaked = global_settings.leaks(settings)
        if leaked:
            out.append(global_settings.describe(leaked))
    if switches is not None:
        moved = global_settings.switches_moved(switches)
        if moved:
            out.append(moved)
    return "; ".join(str.__str__(x) for x in out if x)


HELD_OUTPUTS = 4   # calls whose outputs are held across batches (a ``hold`` per batch) ...
HELD_FIRST = 2     # ... and the first ones, held to the end: a ring of buffers that comes round
                   # once in the whole run shows there


class Runner:
    """Runs batches of calls of ``model`` as the judge specifies them (see module docstring).

    ``state``: a ``ModuleState`` put back before calls that ask for it (a task that keeps state
    across calls). ``own_file``: the candidate's source file, to tell its threads from a
    library's. ``settings``: the process settings before the candidate, checked after a batch.
    ``written``: the inputs the task's reference writes to (the judge found them): each call's
    outputs are followed by those inputs as the call left them, compared like outputs, and a
    call on an earlier call's inputs gets them back as they were before that call wrote them.
    ``jobs``: the candidate's thread (``candidate_thread.Jobs``); none runs the model here."""

    def __init__(self, model, inputs: Inputs, slots: Slots | None, device: str, *,
                 state=None, own_file: str | None = None, settings=None, switches=None,
                 written=(), jobs=None):
        self.model, self.inputs, self.slots, self.device = model, inputs, slots, device
        self.jobs = jobs or Inline()   # where the model's code runs (candidate_thread.py)
        self.switches = switches   # global_settings.process_switches() before the import
        self.cuda = str(device).startswith("cuda")
        self.state, self.own_file, self.settings = state, own_file, settings
        self.kept: dict[str, list] = {}
        self.written = tuple(int(j) for j in written)
        self.pristine: dict[str, dict] = {}   # kept inputs the reference writes, before the call
        # outputs of the calls the judge named (``hold``, one a batch), the last HELD_OUTPUTS
        # kept alive: a buffer handed out again in a later batch (a ring of outputs longer than
        # a batch, a CUDA graph's static output) shows as a held output changed or shared
        self.held: list[list] = []        # per call: (output, fingerprint, span, label, batch)
        self.held_first: list[list] = []
        # inputs of the calls the judge named (``hold_inputs``), which the harness itself never
        # touches again: code that keeps a caller's tensor and writes it during a later call
        # (its answer put there) shows as a held input changed
        self.held_inputs: list[tuple] = []   # (label, [(tensor, fingerprint)])
        self.batches = 0
        self.flush = L2Flush(device) if self.cuda else None

    # -- inputs ---------------------------------------------------------------------------------
    def _inputs(self, c: dict) -> list:
        if "reuse" in c or "refill" in c:
            name = c["reuse"] if "reuse" in c else c["refill"]
            xs = self.kept[name]
            for j, v in self.pristine.get(name, {}).items():
                restore_tree(xs[j], v)   # as the caller gave it, before the call wrote to it
            if "refill" in c:
                fresh = self.inputs.draw(c["seed"])
                for b, f in zip(xs, fresh):   # same addresses, shapes and version counters
                    refill_tree(b, f, c.get("partial"))
                if name in self.pristine:
                    self._keep_pristine(name, xs)
        elif c.get("real"):
            xs = self.inputs.real()
        else:
            xs = self.inputs.draw(c["seed"], c.get("scale"), c.get("only"))
        if c.get("keep_as"):
            self.kept[c["keep_as"]] = xs
            self._keep_pristine(c["keep_as"], xs)
        return xs

    def _keep_pristine(self, name: str, xs: list) -> None:
        if self.written:
            self.pristine[name] = {j: clone_tree(xs[j]) for j in self.written if j < len(xs)}

    # -- one call -------------------------------------------------------------------------------
    def _call(self, k: int, c: dict, kept_outputs: list) -> dict:
        """Call ``k`` of a batch: its record, or ``{"error": (type name, text)}`` when the
        candidate's code raised. The call itself (and a state put back before it) runs in the
        candidate's thread (``candidate_thread.py``): this thread reads its results only through
        the base classes' own methods."""
        with torch.no_grad():
            xs = self._inputs(c)
        watch = InputWatch(xs, skip=self.written)
        submit = self.jobs.submit
        if c.get("restore") and self.state is not None:
            ok, err = submit(_restore, self.state)
            if ok is not True:
                return {"error": err, "tampered": ok is None}
        if c.get("rng") is not None:
            seed_all(int(c["rng"]), self.device)
        start = end = None
        if self.cuda:
            if c.get("flush", True):
                self.flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        moved = guards.classes_changed(_CLASSES)
        rng = rng_state(self.device)
        ok, value = submit(call_model, self.model, xs, c.get("grad", "no_grad"), start, end)
        moved += guards.classes_changed(_CLASSES)
        if ok is not True:
            return {"error": value, "tampered": ok is None}
        out, ms, collecting, left, threads = value
        try:   # gc back on whatever the harness's own work raises (a full device, say)
            return self._record(k, c, xs, watch, out, ms, left, threads, moved, rng, start, end,
                                kept_outputs)
        finally:
            if collecting:
                _gc_on()

    def _record(self, k: int, c: dict, xs: list, watch, out, ms, left, threads, moved, rng,
                start, end, kept_outputs: list) -> dict:
        """The facts of call ``k``, its outputs copied to its slot (see ``_call``)."""
        submit = self.jobs.submit
        if self.cuda:
            # this thread's stream after the candidate's, whichever its thread made current:
            # the outputs are copied as a caller on that thread would read them
            _event_wait(end)
        tree = structure(out)
        outs = flatten(out) + [t for j in self.written if j < len(xs) for t in tensor_leaves(xs[j])]
        metas = [self._snapshot(k, i, o) for i, o in enumerate(outs)]
        _note_input_memory(metas, xs)
        if self.cuda:
            torch.cuda.synchronize()
            try:
                ms = _event_elapsed(start, end)
            except (ValueError, RuntimeError):   # the call "ended" before it recorded its end
                return {"error": ("ResultBeforeItsEnd", "a result came back before the call "
                                  "recorded its end: the candidate's thread returned a result "
                                  "the job did not"), "tampered": True}
        if threads[1]:   # threads it started, still running as it returned
            time.sleep(THREAD_GRACE_S)
        rec = {"ms": ms, "outputs": metas, "tree": tree}
        if moved:   # a method set on a class the harness uses, around this call
            rec["classes_changed"] = sorted(set(moved))
        if rng_moved(rng, self.device):
            rec["rng_moved"] = True
        if left:   # found (and taken off) before the harness touched its outputs
            rec["hooks_left"] = left
        for i, m in enumerate(metas):
            if m.get("copied"):   # what the judge must find in the slot when it reads it
                m["fp"] = fingerprint(self.slots.view(k, i))
        changed = [i for i, (o, m) in enumerate(zip(outs, metas)) if m.get("copied") and
                   fingerprint(o) != m["fp"]]
        if changed:
            rec["changed_after_return"] = changed
        mutated = watch.changed(xs)
        if mutated:
            rec["inputs_mutated"] = mutated
        if threads[1]:
            ok, alive = submit(left_running, threads[0], self.own_file)
            if ok is None:
                return {"error": alive, "tampered": True}
            if ok is True and alive:
                rec["threads_alive"] = alive
        kept_outputs.append(outs)
        if c.get("hold_inputs"):
            mine = [(t, fingerprint(t)) for j, x in enumerate(xs) if j not in self.written
                    for t in tensor_leaves(x) if t.numel()]
            self.held_inputs.append((f"an input of call {k} of batch {self.batches}", mine))
            del self.held_inputs[HELD_FIRST:-HELD_OUTPUTS or None]
        if c.get("hold"):   # True, or the indices of the outputs to hold
            which = c["hold"]
            new = [(o, m["fp"], m["span"], f"call {k} of batch {self.batches}", self.batches)
                   for i, (o, m) in enumerate(zip(outs, metas))
                   if (which is True or i in which) and m.get("copied") and m.get("span")
                   and "input" not in m]
            if len(self.held_first) < HELD_FIRST:
                self.held_first.append(new)
            else:
                self.held.append(new)
                del self.held[:-HELD_OUTPUTS]
        return rec

    def _snapshot(self, k: int, i: int, o) -> dict:
        """Copy output ``i`` of call ``k`` into its slot (when it is the tensor expected there)."""
        if not issubclass(type(o), torch.Tensor):
            # exact values as they are, others by their class's name: their repr is code
            value = o if type(o) in _VALUES else f"<{type_name(o)}>"
            return {"kind": "value", "type": type_name(o), "value": value}
        m = {"kind": "tensor", "type": type_name(o)}
        if not is_dense(o):   # lazy or subclassed: never touched, so its work never runs here
            m["dense"] = False
            return m
        st = o.untyped_storage()
        m.update(dense=True, shape=list(o.shape), dtype=str(o.dtype).replace("torch.", ""),
                 stride=list(o.stride()), device=str(o.device),
                 span=[st.data_ptr(), st.data_ptr() + st.nbytes()] if o.numel() else None,
                 contiguous=o.is_contiguous())
        spec = self.slots.specs[i] if self.slots is not None and i < len(self.slots.specs) else None
        if spec is None or spec["shape"] != m["shape"] or spec["dtype"] != m["dtype"] \
                or o.device.type != torch.device(self.device).type:
            return m
        with torch.no_grad():
            dst = self.slots.view(k, i)
            if o.device.type == "cpu" and o.is_contiguous():   # one thread, as fingerprint()
                np.copyto(dst.reshape(-1).view(torch.uint8).numpy(),
                          o.detach().reshape(-1).view(torch.uint8).numpy())
            else:
                dst.copy_(o, non_blocking=self.slots.pinned)
        m["copied"] = True
        return m

    def _held_changed(self, recs: list) -> str | None:
        """The first output held from an earlier batch that this batch's calls changed or
        handed out again (its memory is alive: the allocator cannot have given it out)."""
        for o, fp, span, label, batch in [h for call in self.held_first + self.held
                                          for h in call]:
            if batch == self.batches:
                continue         # this batch's own: its ``changed_later`` covers it
            if fingerprint(o) != fp:
                return f"the output of {label} (held) changed when later calls ran"
            for rec in recs:
                for m in rec["outputs"]:
                    s = m.get("span")
                    if s and "input" not in m and m.get("device") == str(o.device) \
                            and s[0] < span[1] and span[0] < s[1]:
                        return f"the memory of the output of {label} (held) was handed out again"
        return None

    # -- a batch --------------------------------------------------------------------------------
    def run(self, calls: list[dict]) -> dict:
        """Run ``calls`` (call ``i`` into slot ``i``); the batch's records."""
        self.batches += 1
        recs, kept = [], []
        error = None
        tampered = None
        for k, c in enumerate(calls):
            rec = self._call(k, c, kept)
            if "error" in rec:
                name, text = rec["error"]
                if rec.get("tampered"):
                    tampered = text if type(text) is str else "?"
                error = {"index": k, "type": name if type(name) is str else "?",
                         "text": text if type(text) is str else "?"}
                break
            recs.append(rec)
        if self.cuda:
            try:
                torch.cuda.synchronize()
            except BaseException as e:  # noqa: BLE001 - a fault in the candidate's kernels
                error = error or {"index": len(recs), "type": type(e).__name__,
                                  "text": chain_text(e)[-4000:]}
        later = []
        if error is None:
            for k, outs in enumerate(kept):
                for i, o in enumerate(outs):
                    m = recs[k]["outputs"][i]
                    if m.get("copied") and fingerprint(o) != fingerprint(self.slots.view(k, i)):
                        later.append([k, i])
        reply = {"calls": recs, "error": error}
        if tampered:
            reply["tampered"] = tampered
        if later:
            reply["changed_later"] = later
        if error is None and (self.held or self.held_first):
            held = self._held_changed(recs)
            if held:
                reply["held_changed"] = held
        if error is None:
            for label, items in self.held_inputs:
                if any(fingerprint(t) != fp for t, fp in items):
                    reply["held_inputs_changed"] = f"{label} (held) changed when later calls ran"
                    break
        if self.settings is not None or self.switches is not None:
            # read where the candidate's calls ran: autograd's switch is its thread's own
            ok, leaked = self.jobs.submit(settings_left, self.settings, self.switches)
            if ok is None:
                reply["tampered"] = leaked[1]
            elif ok is True and leaked:
                reply["settings_leaked"] = leaked if type(leaked) is str else "?"
        del kept
        for name in [n for n in self.kept if n.startswith("_")]:   # a batch's own inputs
            del self.kept[name]
            self.pristine.pop(name, None)
        return reply


def sealed() -> dict:
    """This module as private copies (``guards.private``), ``guards`` among them, taken before the
    candidate is imported: replacing ``calls.flatten``, ``Runner._call`` or ``guards.disarm``
    later, even for one call and put back before the batch's check, changes nothing they run."""
    ns = guards.private(guards.module(__name__))
    ns["guards"] = types.SimpleNamespace(**guards.sealed())
    return ns


@contextlib.contextmanager
def quiet_cpu(record: dict, threads: tuple = ()):
    """The timing thread (and ``threads``, native ids: the thread that makes the calls) on
    reserved cores where ``CUDAL1_TIMING_CPUS`` names them."""
    with timing_cpus(record, threads):
        yield


def memfd(size: int, name: str = "cudal1-slots") -> int:
    fd = os.memfd_create(name, 0)
    os.ftruncate(fd, max(size, 1))
    return fd
