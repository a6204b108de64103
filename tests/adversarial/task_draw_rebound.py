# task: log_softmax_rows  expect: ok
# without the audit hook: ok
# Rebinds the task module's get_inputs in the worker (sys.modules["cudal1_task"], which the harness
# draws every call's inputs from): the answer is computed inside the harness's draw, before its
# clock starts (a 12x false speedup where the guards do not cover the task module). The task's
# module is not in sys.modules where the candidate runs (harness/worker.py, ``hide``): it
# finds nothing to rebind, computes in its calls and is accepted, as it would be served.
import sys

import torch
import torch.nn as nn

_task = sys.modules.get("cudal1_task")
_orig = _task.get_inputs if _task is not None else None
_stash = {}


def _get_inputs():
    xs = _orig()
    x = xs[0]
    _stash.clear()
    _stash["x"] = x
    _stash["v"] = x._version
    _stash["sig"] = x[::97, ::89].clone()
    _stash["out"] = torch.log_softmax(x, dim=1)
    return xs


if _task is not None:
    _task.get_inputs = _get_inputs


class ModelNew(nn.Module):
    def forward(self, x):
        s = _stash
        if s.get("x") is x and x._version == s["v"] and torch.equal(x[::97, ::89], s["sig"]):
            s.pop("x")
            return s.pop("out")
        return torch.log_softmax(x, dim=1)
