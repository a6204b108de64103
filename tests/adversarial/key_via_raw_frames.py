# task: diag_matmul  expect: forbidden_call
# Refused by the static check (the ctypes names that reach raw memory, written out); the worker
# alone would accept it: open/raw_union_names_built.py builds the names at run time.
# reaches the worker's _serve frame without taking a frame object: a running
# generator's embedded interpreter frame (CPython 3.11 layout) read at raw addresses through
# ctypes.cast(...).contents, its `previous` pointers walked up to _serve, and the Signer's key read
# out of the closure cell. No sys._getframe, no tb_frame/gi_frame attribute, no gc walk.
import ctypes

import torch
import torch.nn as nn

_P = ctypes.c_void_p
FOUND = {}


def _words(addr, n):
    return ctypes.cast(addr, ctypes.POINTER(ctypes.c_uint64 * n)).contents


def _obj(addr):
    return ctypes.cast(addr, ctypes.py_object).value


def _probe():
    yield None


def _hunt():
    def g():
        me = yield
        # gi_iframe at offset 72 of the generator object; `previous` at +48 of a frame
        frame = id(me) + 80
        for _ in range(64):
            w = _words(frame, 10)
            prev = w[6]
            if not prev:
                break
            frame = prev
            code = _obj(_words(frame, 10)[4])
            if code.co_name == "_serve":
                n = code.co_nlocals + len(code.co_cellvars) + len(code.co_freevars)
                slots = _words(frame + 72, n)
                for i in range(n):
                    if not slots[i]:
                        continue
                    o = _obj(slots[i])
                    if type(o).__name__ == "cell":
                        try:
                            o = o.cell_contents
                        except ValueError:
                            continue
                    if type(o).__name__ == "Signer":
                        FOUND.setdefault(o.direction, (o.key.hex(), o.count))
                break
        yield
    gen = g()
    next(gen)
    gen.send(gen)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if not FOUND:
            try:
                _hunt()
            except Exception as e:  # noqa: BLE001
                FOUND["error"] = repr(e)
        if len(FOUND) == 2:    # both signers found: show it in the verdict (a wrong answer)
            raise RuntimeError("harness key read: " + repr(FOUND))
        return a.unsqueeze(1) * b
