# task: diag_matmul  expect: crash
import fcntl
import os
import stat

import torch
import torch.nn as nn

def _pipe_fds(writing: bool) -> list:
    """The process's own pipe ends (write or read ones): its pipes to the judge among them."""
    mode = os.O_WRONLY if writing else os.O_RDONLY
    return [fd for fd in range(3, 256)
            if _is_pipe(fd) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == mode]


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


# Writes its own bytes into the worker's reply pipe (found among the process's pipes): a "reply"
# the judge must refuse to read as one.
for fd in _pipe_fds(writing=True):
    try:
        getattr(os, "wri" + "te")(fd, (2 ** 40).to_bytes(8, "little") + b'{"ready": true}')
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
