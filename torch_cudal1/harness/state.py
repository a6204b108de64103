"""State a module keeps across calls, as it was at construction, and putting it back.

Some references are not functions of their inputs: a recurrent cell keeps its hidden state in a
plain tensor attribute and reassigns it on every call (KernelBench L3_33), so two calls on one
input answer differently. The verifier's checks compare calls on the same input, in shuffled
order, refilled, under other RNG states — all of which assume a function of the inputs. For
such a task every call starts from the state at construction (both models' own, put back before
each call), which makes it one, and a separate check runs the draws in sequence without putting
it back, so that the candidate must also carry its state forward the way the reference does.

Covered: buffers and plain tensor attributes of every submodule. Parameters are not (a forward
that writes its weights is not inference), nor tensors inside lists or dicts: a reference whose
state lives there stays "nondeterministic".
"""
from __future__ import annotations

import torch


class ModuleState:
    def __init__(self, root):
        self.items: list = []   # (module, is_buffer, name, tensor at construction)
        if not isinstance(root, torch.nn.Module):
            return
        for m in root.modules():
            for name, b in m._buffers.items():
                if isinstance(b, torch.Tensor):
                    self.items.append((m, True, name, b.detach().clone()))
            for name, v in vars(m).items():
                if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                    self.items.append((m, False, name, v.detach().clone()))

    def __bool__(self) -> bool:
        return bool(self.items)

    def restore(self) -> None:
        for m, is_buffer, name, t in self.items:
            if is_buffer:
                m._buffers[name] = t.clone()
            else:
                setattr(m, name, t.clone())
