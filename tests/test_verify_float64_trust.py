"""A float64 copy that is no higher-precision answer is dropped before any candidate runs.
The float64 copy of a transformers BERT layer traced in bf16 can answer one input with a relative
error of 0.68 against its own earlier answer, so that the canary would reject even the eager
baseline as tampering. Kept, such a copy would also loosen every tolerance (it grows with the
native reference's error against it)."""
import torch

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate
from torch_cudal1.verify.float64_trust import distrust

# Its float64 copy answers off by a factor, another factor from its third float64 call on (the count
# travels with the deep copy; no restore of state puts it back).
TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(48, 40)
        self.float64_calls = 0

    def forward(self, x):
        y = torch.relu(self.fc(x))
        if x.dtype == torch.float64:
            self.float64_calls += 1
            y = y * (0.5 if self.float64_calls <= 2 else 0.2)
        return y


def get_inputs():
    return [torch.randn(16, 48)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(48, 40)

    def forward(self, x):
        return torch.relu(self.fc(x)) * SCALE
'''


def _evaluate(tmp_path, scale: float):
    path = tmp_path / "float64_no_answer.py"
    path.write_text(TASK)
    return evaluate(Task.from_file(path), Candidate(CANDIDATE.replace("SCALE", str(scale)),
                                                    origin="test:candidate"),
                    timeout_s=120, time_budget_s=0.3)


def test_an_honest_candidate_is_accepted_against_the_native_reference(tmp_path):
    verdict, timing = _evaluate(tmp_path, 1.0)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert verdict.stats["reference"].startswith("native (float64 copy dropped: output 0:")
    assert timing is not None


def test_the_dropped_copy_loosens_no_tolerance(tmp_path):
    # 10% off: within the tolerance a kept copy 0.5 away from the native answer would allow
    verdict, _ = _evaluate(tmp_path, 1.1)
    assert verdict.reason == "mismatch", (verdict.reason, verdict.detail)


def test_rounding_of_the_native_dtype_keeps_the_float64_copy():
    torch.manual_seed(0)
    hi = torch.randn(4096, dtype=torch.float64)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        assert distrust([hi.to(dtype)], [hi]) == ""
    assert "from the native reference" in distrust([(hi * 0.5).bfloat16()], [hi])
    assert "non-finite" in distrust([hi.float()], [hi.clone().fill_(float("nan"))])
    assert distrust(None, [hi]) == "" and distrust([hi.float()], None) == ""
