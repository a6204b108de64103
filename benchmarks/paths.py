"""Where the benchmarks read their data and write their results.

Results live in ``benchmarks/results/<benchmark>/<device>/``: one folder per benchmark and device,
overwritten by the next run of that benchmark there (git keeps earlier results). ``<device>`` is
``cpu`` or the GPU's short name (``h200``, ``h100``, ``a100``, ...). Each folder has a README.md
with the command that produced it.

The KernelBench tasks with CUDA-L1's published solutions (``cudal1_h100_dev.jsonl``) are read from
``$CUDAL1_KERNELBENCH``, else from ``.carry/kernelbench/`` in the checkout (ignored by git).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# The KernelBench records the committed record analyses read (trace_vs_records, autotune_cost,
# eager_switches, replay_recheck, ...): the latest full run, on an H200.
KERNELBENCH_RECORDS = RESULTS / "kernelbench" / "h200"
TRACES = RESULTS / "trace_vs_records" / "cpu" / "trace_vs_records_cpu.jsonl"

_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro"}


def kernelbench_data() -> Path:
    """The KernelBench task file: ``$CUDAL1_KERNELBENCH`` or ``.carry/kernelbench/`` here."""
    env = os.environ.get("CUDAL1_KERNELBENCH")
    return Path(env) if env else ROOT / ".carry" / "kernelbench" / "cudal1_h100_dev.jsonl"


def gpu_short_name(name: str) -> str:
    """``NVIDIA H200`` -> ``h200``; ``NVIDIA A100-SXM4-80GB`` -> ``a100``;
    ``NVIDIA GeForce RTX 4090`` -> ``rtx-4090``."""
    words = [w for w in name.split() if w.lower() not in _VENDOR_WORDS] or ["gpu"]
    first = words[0].split("-")[0]
    slug = first if re.search(r"\d", first) else "-".join(words[:2])
    return re.sub(r"[^a-z0-9-]+", "-", slug.lower()).strip("-") or "gpu"


def device_dir_name(device: str = "cpu") -> str:
    """``cpu``, or the short name of the GPU a ``cuda[:N]`` device names."""
    device = str(device)
    if not device.startswith("cuda"):
        return "cpu"
    import torch
    if not torch.cuda.is_available():
        return "cuda"
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    return gpu_short_name(torch.cuda.get_device_name(index))


def results_dir(benchmark: str, device: str = "cpu") -> Path:
    """``benchmarks/results/<benchmark>/<device>/`` (not created here)."""
    return RESULTS / benchmark / device_dir_name(device)
