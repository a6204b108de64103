"""``cudal1 verify`` and ``cudal1 bench``: exit codes and JSON."""
import json
from pathlib import Path

import pytest

from torch_cudal1.cli import main

ADV = Path(__file__).parent / "adversarial"
TASK = str(ADV / "tasks" / "diag_matmul.py")


@pytest.fixture(autouse=True)
def _build_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAL1_BUILD_CACHE_DIR", str(tmp_path / "build"))


def test_verify_accepts_with_json(capsys):
    rc = main(["verify", TASK, str(ADV / "honest_diag_broadcast.py"), "--trials", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["verdict"] == "accepted" and out["reason"] == "ok", out
    assert out["median_ms"] > 0 and out["spread_ms"] >= 0 and out["timing"]["n"] >= 10
    assert out["speedup_vs_reference"] is None   # the reference is timed only when asked


def test_verify_speedup_times_the_reference_beside_the_candidate(capsys):
    rc = main(["verify", TASK, str(ADV / "honest_diag_broadcast.py"), "--trials", "2",
               "--speedup", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["timing"]["extra"]["paired_ref_ms"] > 0, out
    assert out["speedup_vs_reference"] == pytest.approx(
        out["timing"]["extra"]["paired_ref_ms"] / out["median_ms"])
    rc = main(["verify", TASK, str(ADV / "honest_diag_broadcast.py"), "--trials", "2", "--speedup"])
    text = capsys.readouterr().out
    assert rc == 0 and "timed right after it: x" in text, text


def test_verify_rejects(capsys):
    rc = main(["verify", TASK, str(ADV / "cache_by_version.py")])
    out = capsys.readouterr().out
    assert rc == 1 and out.startswith("rejected (stale_output)")


def test_verify_static_rejection_json(capsys):
    rc = main(["verify", TASK, str(ADV / "forbidden_static.py"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["verdict"] == "rejected" and out["reason"] == "forbidden_call"


def test_usage_errors(tmp_path, capsys):
    assert main(["verify", TASK, str(tmp_path / "missing.py")]) == 2
    assert main(["verify", str(tmp_path / "missing_task.py"), TASK]) == 2
    not_task = tmp_path / "x.py"
    not_task.write_text("x = 1\n")
    assert main(["verify", str(not_task), str(ADV / "honest_diag_broadcast.py")]) == 2
    import torch
    if not torch.cuda.is_available():
        assert main(["verify", TASK, str(ADV / "honest_diag_broadcast.py"), "--device", "cuda"]) == 2
    assert main(["verify", TASK, str(ADV / "honest_diag_broadcast.py"), "--device", "tpu"]) == 2
    assert main(["bench", TASK, "--baselines", "nope"]) == 2


def test_bench_table_json(capsys):
    rc = main(["bench", TASK, str(ADV / "honest_diag_broadcast.py"), str(ADV / "empty_reuse.py"),
               "--baselines", "eager", "--json", "--trials", "2"])
    out = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in out["rows"]]
    assert rc == 1 and names[0] == "eager" and len(names) == 3
    eager, honest, bad = out["rows"]
    assert eager["speedup_vs_eager"] == pytest.approx(1.0)
    assert honest["verdict"] == "accepted" and honest["speedup_vs_eager"] > 0
    # Uninitialised memory may hold NaN or just wrong numbers (as its header says).
    assert bad["verdict"] == "rejected" and bad["median_ms"] is None and bad["reason"] in ("mismatch", "nan")
