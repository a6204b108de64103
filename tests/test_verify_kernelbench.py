"""CPU-capable CUDA-L1 solutions (plain PyTorch, the smallest inputs) through the verifier.
The real LLM output includes false speedups: (2, 18) and (3, 33) write every result into one
preallocated buffer; (2, 66) and (2, 80), whose answers are constant, return the same tensor on
every call."""
import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

EXPECT = {(1, 100): "ok", (2, 14): "ok", (3, 1): "ok", (2, 18): "output_aliased",
          (2, 66): "output_aliased", (2, 80): "output_aliased", (3, 33): "output_aliased"}


def test_cpu_capable_kernelbench_rows(kernelbench_rows, tmp_path):
    rows = {(r["level_id"], r["task_id"]): r for r in kernelbench_rows}
    missing = [k for k in EXPECT if k not in rows or not rows[k]["custom_code"]]
    if missing:
        pytest.skip(f"rows {missing} not in this data file")
    got = {}
    for key in EXPECT:
        r = rows[key]
        verdict, timing = evaluate(Task(r["ref_code"], name=f"l{key[0]}_{key[1]}"),
                                   Candidate(r["custom_code"], origin="cudal1"),
                                   build_cache_dir=str(tmp_path / "build"), time_budget_s=0.3)
        got[key] = verdict.reason
        assert (timing is not None) == verdict.accepted
    assert got == EXPECT
