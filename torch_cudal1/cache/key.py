"""Cache keys: graph identity + input metadata + device + versions + numerics flags.

The only builder of keys: serving (a graph), ``cudal1 optimize`` (a task file: ``task_key``) and
every check of an entry's key call ``key_fields`` and ``cache_key`` here. ``versions`` holds the
software that decides what a search finds: torch, CUDA, Triton, cudal1, the cache format, and the
source hash of every rewrite pass (``rewrites.pass_hashes``), so that changing a pass's code
gives new keys without a version bump.
"""
from __future__ import annotations

import functools
import hashlib
import json
import platform
import threading

import torch

from ..version import CACHE_FORMAT, __version__


def input_metadata(inputs) -> list:
    meta = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            meta.append({"shape": list(x.shape), "stride": list(x.stride()),
                         "dtype": str(x.dtype), "device": x.device.type})
        elif isinstance(x, (bool, int, float)) or isinstance(x, (torch.SymInt, torch.SymFloat)):
            meta.append({"scalar": type(x).__name__, "value": repr(x)})
        else:
            meta.append({"other": type(x).__name__})
    return meta


@functools.lru_cache(maxsize=None)
def device_identity(device: str) -> dict:
    """What makes one device kind different from another, for keys."""
    dev = torch.device(device)
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return {"type": "cuda", "name": props.name, "capability": f"{props.major}.{props.minor}",
                "sm_count": props.multi_processor_count}
    return {"type": dev.type, "name": platform.processor() or platform.machine()}


_VERSIONS_LOCK = threading.Lock()


def software_versions() -> dict:
    """Computed once, by one thread: threads that meet their first graph at once would otherwise
    import Triton and the rewrite passes side by side, and one that saw an import half done would
    key the same graph differently, or fail."""
    with _VERSIONS_LOCK:
        return _software_versions()


@functools.lru_cache(maxsize=None)
def _software_versions() -> dict:
    try:
        import triton
        triton_version = triton.__version__
    except Exception:  # noqa: BLE001 - triton is optional on CPU
        triton_version = None
    from ..rewrites import pass_hashes
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton_version,
            "cudal1": __version__, "format": CACHE_FORMAT, "rewrites": pass_hashes()}


def numerics_flags(tf32: str = "auto") -> dict:
    """The process's precision settings, and whether cudal1 may serve float32 products in TF32
    (option ``tf32``: a winner found with it allowed must not serve a process that forbids it)."""
    return {
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "default_dtype": str(torch.get_default_dtype()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "cudal1_tf32": tf32 != "off",
    }


def key_fields(graph_id: str, inputs_meta: list, device: str, tf32: str = "auto") -> dict:
    return {"graph": graph_id, "inputs": inputs_meta, "device": device_identity(device),
            "versions": software_versions(), "flags": numerics_flags(tf32)}


def cache_key(fields: dict) -> str:
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def task_key(task, device: str, tf32: str = "auto") -> tuple[str, dict]:
    """(key, fields) of a KernelBench task file: its source stands for the graph, and its
    ``get_inputs()`` for the inputs, on this device."""
    inputs = task.load().get_inputs()
    graph_id = "src:" + hashlib.sha256(task.source.encode()).hexdigest()
    fields = key_fields(graph_id, input_metadata(inputs), device, tf32)
    return cache_key(fields), fields


@functools.lru_cache(maxsize=None)
def _driver() -> str | None:
    if not torch.cuda.is_available():
        return None
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except Exception:  # noqa: BLE001
        return None


# Packages whose versions are recorded with every entry (not keyed: they rarely change results,
# but `cudal1 cache explain` and `import` show them when an entry does not fit).
RECORDED_PACKAGES = ("torch", "triton", "numpy", "safetensors", "filelock", "transformers",
                     "torchvision", "vllm", "torch_cudal1")


@functools.lru_cache(maxsize=None)
def package_versions() -> dict:
    from importlib import metadata
    out = {}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


@functools.lru_cache(maxsize=None)
def _cuda_details(device: str) -> dict:
    dev = torch.device(device)
    if dev.type != "cuda":
        return {}
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {"memory_gb": round(props.total_memory / 2**30, 1),
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}


def environment_fingerprint(device: str) -> dict:
    """Everything recorded about the environment an entry was made in (more than the key):
    GPU name and capability, driver, CUDA, cuDNN, torch, triton, Python, package versions."""
    return {"device": device_identity(device), "versions": software_versions(),
            "driver": _driver() if device.startswith("cuda") else None,
            "cuda_details": _cuda_details(device),
            "python": platform.python_version(), "platform": platform.platform(),
            "packages": package_versions()}
