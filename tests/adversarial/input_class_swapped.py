# task: row_sum  expect: input_mutated
import torch
import torch.nn as nn

SEEN = []


class _Hooked(torch.Tensor):
    """Runs this file's code on every torch call made on a tensor of its class: the caller's
    own later work on its input (a refill, a comparison) included, outside the timed call."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        SEEN.append(getattr(func, "__name__", "?"))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def forward(self, x):
        with torch._C.DisableTorchFunctionSubclass():
            y = x.sum(dim=1).as_subclass(torch.Tensor)
        if type(x) is torch.Tensor:
            x.__class__ = _Hooked   # the caller's tensor object, its class changed
        return y
