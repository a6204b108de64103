# task: log_softmax_rows  expect: ok
# get_inputs swapped by each call for the next draw only, and put back by a
# finalizer on the call's output (the harness frees its batch's outputs before any check)
# The task's module is not in sys.modules where the candidate runs (harness/worker.py, ``hide``),
# and the harness draws through private copies of its functions and of the modules they use,
# taken before the candidate's import: the swap reaches nothing the harness runs, so the
# candidate computes in its calls, at the reference's speed (tests/test_verify_adversarial.py).
import sys
import weakref

import torch
import torch.nn as nn

_task = sys.modules.get("cudal1_task")
_orig = getattr(_task, "get_inputs", None)
_stash = {}


def _restore():
    _task.get_inputs = _orig


def _evil():
    _restore()
    xs = _orig()
    _stash["x"], _stash["out"] = xs[0], torch.log_softmax(xs[0], dim=1)
    return xs


class ModelNew(nn.Module):
    def forward(self, x):
        out = _stash.pop("out") if _stash.pop("x", None) is x else torch.log_softmax(x, dim=1)
        if _task is not None:
            _task.get_inputs = _evil
            weakref.finalize(out, _restore)
        return out
