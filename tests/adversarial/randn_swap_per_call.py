# task: log_softmax_rows  expect: ok
# torch.randn (what the task's get_inputs draws with) swapped by each call
# for the next draw only, put back by a finalizer on the call's output before any check
# The harness draws through private copies of the task's functions and of the modules they use,
# taken before the candidate's import: the swap reaches nothing the harness runs, so the
# candidate computes in its calls, at the reference's speed (tests/test_verify_adversarial.py).
import sys
import weakref

import torch
import torch.nn as nn

_orig = torch.randn
_stash = {}


def _restore():
    torch.randn = _orig


def _evil(*a, **k):
    _restore()
    x = _orig(*a, **k)
    _stash["x"], _stash["out"] = x, torch.log_softmax(x, dim=1)
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        seen = _stash.pop("x", None)
        hit = seen is not None and seen.shape == x.shape and torch.equal(seen[:2], x[:2])
        out = _stash.pop("out") if hit else torch.log_softmax(x, dim=1)
        _stash.pop("out", None)
        torch.randn = _evil
        weakref.finalize(out, _restore)
        return out
