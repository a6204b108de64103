# task: diag_matmul  expect: forbidden_call
# Refused by the static check (the ctypes names that reach raw memory, written out); the worker
# alone would accept it: open/raw_union_names_built.py builds the names at run time.
# raw memory read/write through ctypes.cast(int, POINTER(...)).contents
# (no "ctypes.cdata" audit event: .contents is not from_address) and id() -> object.
import ctypes
import sys

import torch
import torch.nn as nn

buf = torch.zeros(4)
arr = ctypes.cast(buf.data_ptr(), ctypes.POINTER(ctypes.c_float * 4)).contents
arr[0] = 3.5                                   # a write at a raw address
assert float(buf[0]) == 3.5
# an object from its address: the refcount field of sys.modules read raw
word = ctypes.cast(id(sys.modules), ctypes.POINTER(ctypes.c_ssize_t * 2)).contents
RAW_OK = word[0] > 0 and float(buf[0]) == 3.5


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not RAW_OK:
            raise RuntimeError("raw access failed")
        return a.unsqueeze(1) * b
