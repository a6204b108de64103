"""Helpers shared by the verify and bench subcommands."""
from __future__ import annotations

from pathlib import Path

from . import UsageError


def read_file(path: str, what: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} {path!r} does not exist")
    return p.read_text()


def check_device(device: str) -> str:
    if device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            raise UsageError(f"--device {device} requested but no CUDA GPU is available")
    elif device != "cpu":
        raise UsageError(f"--device must be cpu or cuda, not {device!r}")
    return device


def load_task(path: str):
    from ..task import Task
    read_file(path, "task file")
    task = Task.from_file(path)
    for name in ("class Model", "def get_inputs", "def get_init_inputs"):
        if name not in task.source:
            raise UsageError(f"{path}: not a KernelBench task (no {name!r})")
    return task
