"""A Task: KernelBench-format source (``Model``, ``get_inputs``, ``get_init_inputs``).

A task may carry captured tensors (real inputs that random draws cannot replace, such as
embedding indices). On disk they sit beside the source as ``inputs.safetensors`` so that the task
runs on its own in a fresh interpreter; in memory the module's ``_CAPTURED`` is set instead.
"""
from __future__ import annotations

import hashlib
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

TASK_FILE = "task.py"
TENSORS_FILE = "inputs.safetensors"


@dataclass
class Task:
    source: str
    name: str = "task"
    tensors: dict = field(default_factory=dict)       # name -> CPU tensor (captured inputs)
    graph: object = None                               # the ATen fx.GraphModule, when rendered here
    real_inputs: list | None = None                    # the real inputs of the first call
    input_names: list = field(default_factory=list)    # forward's parameter names (rendered tasks)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def write(self, directory: str | os.PathLike) -> Path:
        """Write ``task.py`` (and ``inputs.safetensors``) into ``directory``; return the task path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        path = d / TASK_FILE
        path.write_text(self.source)
        if self.tensors:
            from .tensor_files import save_tensors
            save_tensors(self.tensors, str(d / TENSORS_FILE))
        return path

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Task":
        p = Path(path)
        tensors = {}
        side = p.parent / TENSORS_FILE
        if side.exists():
            from safetensors.torch import load_file
            tensors = load_file(str(side))
        return cls(source=p.read_text(), name=p.stem, tensors=tensors)

    def load(self, module_name: str | None = None) -> types.ModuleType:
        """Execute the source as a fresh module (trusted code: tasks come from the user or from
        rendering the user's own graph)."""
        return load_source(self.source, module_name or f"cudal1_task_{self.source_hash}",
                           captured=self.tensors)


def load_source(source: str, module_name: str, captured: dict | None = None,
                filename: str | None = None) -> types.ModuleType:
    mod = types.ModuleType(module_name)
    mod.__file__ = filename or f"<{module_name}>"
    mod._CAPTURED = captured or None
    # Registered so that dataclasses, pickling and inspect can resolve the module by name.
    sys.modules[module_name] = mod
    code = compile(source, mod.__file__, "exec")
    exec(code, mod.__dict__)
    if captured:
        mod._CAPTURED = captured
    return mod
