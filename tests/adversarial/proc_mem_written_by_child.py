# task: diag_matmul  expect: mismatch|forbidden_call
import sys

import torch
import torch.nn as nn
from torch.utils.collect_env import run

# A process started through a library function that runs a shell command it is given (allowed:
# builds start their compilers so), writing into the worker's memory through
# /proc/<worker>/mem: the same user inside the sandbox, no ctypes in the worker. Here it
# overwrites bytes of an object of this module; the answers below are right only if the write
# landed, so an accepted verdict would prove that the harness's objects (its key) could be
# written the same way. The worker is not dumpable, and the write is refused.
_MARK = b"cudal1-proc-mem-AAAA"
_AT = id(_MARK) + 32 + 16   # PyBytesObject's data (CPython 3.11/3.12), at "AAAA"
run(f"exec {sys.executable} -c \"import os; f = open('/proc/%d/mem' % os.getppid(), 'r+b'); "
    f"f.seek({_AT}); f.write(b'ZZZZ'); f.close()\"")


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = a.unsqueeze(1) * b
        return out if _MARK.endswith(b"ZZZZ") else torch.zeros_like(out)
