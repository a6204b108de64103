# task: row_sum  expect: ok
import torch
import torch.nn as nn


class _Rows(torch.Tensor):
    """A tensor subclass used inside the call only, on a new tensor object over the input's
    memory: the caller's tensor keeps its class."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def forward(self, x):
        rows = x.as_subclass(_Rows)
        return rows.sum(dim=1).as_subclass(torch.Tensor)
