"""Shared pieces of the engine tests: a tiny CPU task and scripted answers to it."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_llm_server import FakeLLMServer  # noqa: E402,F401

# A deliberately slow reference (a Python loop over rows) so that a vectorised answer is
# measurably faster even on a busy CPU, and each verification child stays quick. 1024 rows
# (~5 ms a call): with 256 (~1 ms) the reference's spread on a loaded 2-core CI host twice
# exceeded the whole gain, and the search then rightly kept the reference.
TASK_SRC = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.stack([torch.relu(row) * 2.0 + 1.0 for row in x])


def get_inputs():
    return [torch.randn(1024, 32)]


def get_init_inputs():
    return []
'''

FAST = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0
'''

SLOW = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.stack([torch.relu(row) * 2.0 + 1.0 for row in x])
        for _ in range(3):   # the same answer, with needless extra passes
            out = torch.stack([row.clone() for row in out])
        return out
'''

WRONG = FAST.replace("* 2.0 + 1.0", "* 3.0 + 1.0")
NOT_COMPILING = FAST.replace("def forward(self, x):", "def forward(self, x)")


def answer(code: str, analysis: str = "The loop over rows dominates; vectorise it.") -> str:
    return f"{analysis}\n\n```python\n{code}```\n"


GARBAGE = "```\n%%%% \x00 lorem ipsum }}{{ class Model\n```"
NO_CODE = "I think you should vectorise the loop, but I will not write the code."


def make_task():
    from torch_cudal1.task import Task
    return Task(source=TASK_SRC, name="rowloop")
