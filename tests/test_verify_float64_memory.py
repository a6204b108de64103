"""The reference's float64 copy running out of device memory is the device's fault, not the
candidate's (a 43 GB float64 copy beside other jobs can). A float64 copy that never fits is
dropped (native is the reference); one that ran before and runs out later is "memory", which the
search verifies again alone. It lives in the judge's process, out of the candidate's reach, so
any other failure of it is the reference's own: dropped too, never blamed on the candidate."""
from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

# Its float64 copy runs out of memory from float64 call LIMIT + 1 on (a count the deep copy
# carries along, and that no restore of state puts back: the device filling up as the run goes).
TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(48, 40)
        self.float64_calls = 0

    def forward(self, x):
        if x.dtype == torch.float64:
            self.float64_calls += 1
            if self.float64_calls > LIMIT:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(16, 48)]


def get_init_inputs():
    return []
'''

HONEST = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(48, 40)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''


def _evaluate(tmp_path, limit: int):
    path = tmp_path / "float64_runs_out.py"
    path.write_text(TASK.replace("LIMIT", str(limit)))
    return evaluate(Task.from_file(path), Candidate(HONEST, origin="test:honest"),
                    timeout_s=120, time_budget_s=0.3)


def test_float64_copy_running_out_later_is_memory_not_tampering(tmp_path):
    # it answers draw 0 and the first draws, then runs out beside the candidate
    verdict, timing = _evaluate(tmp_path, limit=2)
    assert not verdict.accepted and timing is None
    assert verdict.reason == "memory", (verdict.reason, verdict.detail)
    assert "float64 copy" in verdict.detail


def test_float64_copy_that_never_fits_is_dropped(tmp_path):
    verdict, timing = _evaluate(tmp_path, limit=0)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert verdict.stats["reference"] == "native"
    assert timing is not None and timing.median_ms > 0


def test_float64_copy_failing_otherwise_after_it_ran_is_dropped(tmp_path):
    """Any other error from a float64 copy that answered before: the candidate cannot have
    caused it (another process), so the native reference answers from there on."""
    path = tmp_path / "float64_breaks.py"
    path.write_text(TASK.replace("LIMIT", "2").replace(
        'torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")',
        'RuntimeError("expected scalar type Double but found Float")'))
    verdict, _ = evaluate(Task.from_file(path), Candidate(HONEST, origin="test:honest"),
                          timeout_s=120, time_budget_s=0.3)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert verdict.stats["reference"].startswith("native")
