"""Process-wide numerics and backend settings that engine code may change, kept to its own calls.

Generated kernels often set global switches at import or in ``__init__``: TF32 for products and
convolutions, ``cudnn.benchmark``, ``cudnn.deterministic``, attention backends (about one in five
of CUDA-L1's KernelBench solutions). Served as they are, those would change the numerics and
algorithms of the rest of the user's program. So wherever engine code is loaded (the verifier's
child and the serving process alike):

* the settings are read before its import and after its construction (``snapshot``);
* if they changed, the caller's are put back, and the module is wrapped (``scoped``) so that its
  own settings hold during its calls only; what it measured and was verified with is what it
  gets when served;
* a module whose *calls* change settings is refused by the verifier (``leaks``): nothing can put
  the caller's back without costing every call a full read of the settings.

The reference always runs under the harness's settings (``applied``), so a candidate cannot
loosen the tolerance it is judged by.
"""
from __future__ import annotations

import contextlib

import torch


def _fp32_pairs() -> list[tuple[str, str]]:
    """(backend, op) pairs of PyTorch's per-backend float32 precision API on this build."""
    getter = getattr(torch._C, "_get_fp32_precision_getter", None)
    pairs = []
    if getter is None:
        return pairs
    for backend in ("generic", "cuda", "mkldnn", "cudnn"):
        for op in ("all", "matmul", "conv", "rnn"):
            try:
                getter(backend, op)
            except Exception:  # noqa: BLE001 - not a pair of this build
                continue
            pairs.append((backend, op))
    return pairs


def _legacy_matmul_get():
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:   # legacy and per-backend APIs disagree: read the latter only
        return None


def _attr(owner, name):
    return (lambda: getattr(owner, name)), (lambda v: setattr(owner, name, v))


def _legacy_cudnn_tf32():
    def get():
        try:
            return torch.backends.cudnn.allow_tf32
        except RuntimeError:   # conv and RNN set apart through the per-backend API
            return None
    return get, (lambda v: setattr(torch.backends.cudnn, "allow_tf32", v))


def _sdp(name):
    return getattr(torch.backends.cuda, f"{name}_sdp_enabled"), getattr(torch.backends.cuda,
                                                                         f"enable_{name}_sdp")


def _settings() -> dict:
    """name -> (get, set), in the order they are applied."""
    # the legacy switches first: setting them rewrites the per-backend values, which follow
    s = {"float32_matmul_precision": (_legacy_matmul_get, torch.set_float32_matmul_precision),
         "cudnn.allow_tf32": _legacy_cudnn_tf32()}
    for backend, op in _fp32_pairs():
        s[f"fp32_precision.{backend}.{op}"] = (
            (lambda b=backend, o=op: torch._C._get_fp32_precision_getter(b, o)),
            (lambda v, b=backend, o=op: torch._C._set_fp32_precision_setter(b, o, v)))
    matmul = torch.backends.cuda.matmul
    for name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        s[f"cuda.matmul.{name}"] = _attr(matmul, name)
    for name in ("benchmark", "deterministic", "enabled"):
        s[f"cudnn.{name}"] = _attr(torch.backends.cudnn, name)
    for name in ("flash", "mem_efficient", "math", "cudnn"):
        if hasattr(torch.backends.cuda, f"enable_{name}_sdp"):
            s[f"sdp.{name}"] = _sdp(name)
    s["deterministic_algorithms"] = (
        lambda: (torch.are_deterministic_algorithms_enabled(),
                 torch.is_deterministic_algorithms_warn_only_enabled()),
        lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]))
    s["default_dtype"] = (torch.get_default_dtype, torch.set_default_dtype)
    return s


_SETTINGS: dict | None = None


def settings() -> dict:
    global _SETTINGS
    if _SETTINGS is None:
        _SETTINGS = _settings()
    return _SETTINGS


def snapshot() -> dict:
    out = {}
    for name, (get, _) in settings().items():
        try:
            out[name] = get()
        except Exception:  # noqa: BLE001 - unreadable in this state (mixed APIs)
            out[name] = None
    return out


def apply(state: dict) -> None:
    """Set every setting of ``state`` that differs from the process's (None: left alone)."""
    for name, (get, put) in settings().items():
        want = state.get(name)
        if want is None:
            continue
        try:
            if get() != want:
                put(want)
        except Exception:  # noqa: BLE001 - e.g. the legacy getter refusing a mixed state
            try:
                put(want)
            except Exception:  # noqa: BLE001
                pass


@contextlib.contextmanager
def applied(state: dict):
    """``state`` for the block, the settings before it afterwards."""
    saved = snapshot()
    apply(state)
    try:
        yield
    finally:
        apply(saved)


# The legacy switches rewrite per-backend values as a side effect (through them, PyTorch writes
# "ieee" where a per-backend value was "none"); the values each is tried with.
_LEGACY = {"float32_matmul_precision": ("high", "highest"), "cudnn.allow_tf32": (False, True)}
_REWRITES: dict[str, list[str]] = {}


def rewritten_by(name: str) -> list[str]:
    """The per-backend settings that setting the legacy switch ``name`` rewrites on this build,
    in the table's order; found once by trying it (and undoing it)."""
    if name not in _REWRITES:
        table, before = settings(), snapshot()
        touched = set()
        try:
            for value in _LEGACY.get(name, ()):
                table[name][1](value)
                now = snapshot()
                touched |= {k for k in table if k not in _LEGACY and now[k] != before[k]}
        finally:
            apply(before)
        _REWRITES[name] = [k for k in table if k in touched]
    return _REWRITES[name]


_MATMUL: list | None = None


def _matmul_settings() -> list:
    """(get, set) of the per-backend settings that ``set_float32_matmul_precision`` rewrites:
    only those are read and set per call."""
    global _MATMUL
    if _MATMUL is None:
        table = settings()
        _MATMUL = [table[k] for k in rewritten_by("float32_matmul_precision")]
    return _MATMUL


def tf32_on():
    """float32 matrix products on TF32 tensor cores from now (the built-in TF32 candidates, per
    call: only the settings this touches are read and set). Returns what ``tf32_off`` needs to
    put every precision setting back exactly. Where the caller allows TF32 or looser already, or
    mixed the legacy and per-backend APIs (its setting cannot be read back), nothing changes."""
    if _legacy_matmul_get() != "highest":
        return None
    saved = [get() for get, _ in _matmul_settings()]
    torch.set_float32_matmul_precision("high")
    return saved


def tf32_off(saved) -> None:
    if saved is None:
        return
    torch.set_float32_matmul_precision("highest")
    for (_, put), value in zip(_matmul_settings(), saved):
        put(value)   # the legacy setter writes "ieee" where it was "none"


def cudnn_benchmark_on() -> bool:
    """cuDNN's autotuning of convolution algorithms from now (the built-in candidates, per call);
    returns the caller's setting for ``cudnn_benchmark_off``."""
    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    return saved


def cudnn_benchmark_off(saved: bool) -> None:
    torch.backends.cudnn.benchmark = saved


@contextlib.contextmanager
def tf32_products():
    saved = tf32_on()
    try:
        yield
    finally:
        tf32_off(saved)


def diff(before: dict, after: dict) -> dict:
    """name -> (before, after) for the settings that differ."""
    return {k: (before.get(k), after.get(k)) for k in after if before.get(k) != after.get(k)}


def describe(changes: dict) -> str:
    return ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in sorted(changes.items()))


class Scoped(torch.nn.Module):
    """A module whose import or construction changed global settings: they hold during its calls
    only. Only the settings it changed are read and set per call."""

    def __init__(self, inner, own: dict):
        super().__init__()
        self.inner = inner
        table = settings()
        # in the table's order (the legacy matmul precision before the per-backend values)
        self._own = [(table[k][0], table[k][1], own[k]) for k in table if k in own]

    def forward(self, *args, **kwargs):
        saved = [get() for get, _, _ in self._own]
        for _, put, value in self._own:
            put(value)
        try:
            return self.inner(*args, **kwargs)
        finally:
            for (_, put, _), value in zip(self._own, saved):
                if value is not None:   # None: unreadable (mixed precision APIs), left as is
                    put(value)


def scoped(model, before: dict):
    """``model`` as loaded after ``before`` was read: unchanged if the settings are as they were,
    else the caller's settings restored and the model wrapped in ``Scoped`` (returned with the
    changes, for logs)."""
    after = snapshot()
    changes = diff(before, after)
    if not changes:
        return model, {}
    apply(before)
    # a legacy switch among them rewrites per-backend values when set: those are the module's
    # (on entry) and the caller's (on exit) too, exactly
    keys = set(changes).union(*(rewritten_by(k) for k in changes if k in _LEGACY))
    own = {k: after[k] for k in keys}
    return Scoped(model, own), changes


def process_switches() -> dict:
    """Process-wide switches outside the numerics table (which a winner's calls are scoped to):
    thread counts, autograd, the garbage collector, flushing subnormals to zero, oneDNN,
    opt_einsum. A candidate may not leave
    them changed, at import or by its calls: served, it would change them for the rest of the
    user's program (``switches_moved``)."""
    import gc
    out = {"num_threads": torch.get_num_threads(),
           "num_interop_threads": torch.get_num_interop_threads(),
           # autograd off for the importing thread would stop the user's training; the garbage
           # collector off, their memory growing
           "grad_enabled": torch.is_grad_enabled(), "gc_enabled": gc.isenabled(),
           # no getter: a subnormal times one comes back as zero where they are flushed
           "flush_denormal": bool((torch.tensor([1e-39]) * 1.0).item() == 0.0)}
    try:
        out["mkldnn.enabled"] = bool(torch._C._get_mkldnn_enabled())
    except Exception:  # noqa: BLE001 - not on this build
        pass
    opt = getattr(torch.backends, "opt_einsum", None)
    if opt is not None and hasattr(opt, "enabled"):
        out["opt_einsum.enabled"] = bool(opt.enabled)
    return out


def switches_moved(before: dict) -> str:
    """'' where ``process_switches()`` is still ``before``, else which moved, described."""
    now = process_switches()
    return ", ".join(f"{k} {before.get(k)!r} -> {v!r}" for k, v in now.items()
                     if before.get(k) != v)


def leaks(before: dict) -> dict:
    """Settings that differ from ``before`` now (after a module's calls)."""
    return diff(before, snapshot())


def to_json(state: dict) -> dict:
    """``state`` (a ``snapshot()``) as JSON values, for another process (``from_json``)."""
    out = {}
    for k, v in state.items():
        if isinstance(v, torch.dtype):
            v = {"dtype": str(v).replace("torch.", "")}
        elif isinstance(v, tuple):
            v = {"tuple": list(v)}
        out[k] = v
    return out


def from_json(state: dict) -> dict:
    out = {}
    for k, v in (state or {}).items():
        if isinstance(v, dict) and "dtype" in v:
            v = getattr(torch, v["dtype"])
        elif isinstance(v, dict) and "tuple" in v:
            v = tuple(v["tuple"])
        out[k] = v
    return out
