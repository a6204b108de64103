"""On a GPU: `cudal1 optimize --engine replay` serving CUDA-L1's own KernelBench answer for its
task (real LLM output) through the whole loop: verify, time, cache, cache hit."""
import json
import os
from pathlib import Path

import pytest

from torch_cudal1.cli import main as cli_main


@pytest.mark.gpu
def test_replay_kernelbench_answer_on_cuda(kernelbench_rows, tmp_path, capsys):
    # The first level-1 task with an answer (a general pick, not a tuned one).
    row = next(r for r in kernelbench_rows if r["level_id"] == 1 and r.get("custom_code"))
    task = tmp_path / f"l{row['level_id']}_t{row['task_id']}.py"
    task.write_text(row["ref_code"])
    kb = Path(os.environ.get("CUDAL1_KERNELBENCH",
                             Path(__file__).resolve().parents[2] / "shared/kernelbench/cudal1_h100_dev.jsonl"))
    args = ["optimize", str(task), "--device", "cuda", "--engine", "replay", "--replay-file", str(kb),
            "--rounds", "2", "--samples", "1", "--baselines", "eager", "--cache-dir", str(tmp_path / "c"),
            "--report", str(tmp_path / "report.md"), "--json"]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    res = json.loads(out.strip().splitlines()[-1])
    # Round 1 is the recorded answer; round 2 has none, so the search stops there.
    assert res["rounds_run"] == 2 and res["candidates_tried"] == 1 and res["complete"]
    assert res["winner_ms"] > 0 and res["eager_ms"] > 0
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "engine_gpu_replay.json").write_text(json.dumps(res, indent=1))
        Path(os.environ["OUT"], "engine_gpu_replay_report.md").write_text((tmp_path / "report.md").read_text())
    assert cli_main(args) == 0
    hit = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert hit["cache_hit"] and hit["winner_origin"] == res["winner_origin"]
