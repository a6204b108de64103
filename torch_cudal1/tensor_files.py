"""Tensors written to safetensors files (tasks' captured inputs, test vectors, inputs handed to a
child process).

safetensors refuses a dict whose tensors share memory, and a graph's inputs often do: two views
of one attention mask (BigBird's block-sparse attention passes both), an output that is an input.
Each tensor after the first on a storage is written as a copy of its own; reading a file back
gives separate tensors either way.
"""
from __future__ import annotations

import torch


def save_tensors(tensors: dict, path: str, metadata: dict | None = None) -> None:
    """``safetensors.torch.save_file`` of ``tensors`` (on the CPU, contiguous), where tensors that
    share memory are written as copies."""
    from safetensors.torch import save_file
    out, storages = {}, set()
    for k, v in tensors.items():
        t = v.detach().cpu().contiguous()
        ptr = t.untyped_storage().data_ptr()
        if ptr in storages and t.numel():
            t = t.clone()
        storages.add(ptr)
        out[k] = t
    save_file(out, str(path), metadata=metadata)
