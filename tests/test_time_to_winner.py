"""benchmarks/time_to_winner.py: when a search found its winner, and the speedup reachable after
t seconds, at each float32 precision."""
import json

from benchmarks.time_to_winner import main, task_figures


def _rec(attempts, **kw):
    return {"id": "L1_1", "status": "ok", "eager_ms": 4.0, "attempts": attempts, **kw}


def test_times_recorded_give_the_winner_and_the_curve():
    rec = _rec([{"origin": "baseline:eager", "reason": "ok", "ms": 4.0, "at_s": 6.0},
                {"origin": "baseline:inductor", "reason": "ok", "ms": 2.0, "at_s": 12.0},
                {"origin": "builtin:tf32", "reason": "ok", "ms": 0.5, "at_s": 20.0},
                {"origin": "builtin:cudagraph", "reason": "mismatch", "ms": None, "at_s": 25.0},
                {"origin": "builtin:inductor-max-autotune", "reason": "ok", "ms": 1.0, "at_s": 50.0}])
    hi = task_figures(rec, "highest")      # TF32 left out at PyTorch's default precision
    assert hi["recorded"] and hi["winner"] == "builtin:inductor-max-autotune"
    assert hi["final"] == 4.0 and hi["winner_s"] == 50.0
    assert hi["reach"][5] == 1.0 and hi["reach"][20] == 2.0 and hi["reach"][60] == 4.0
    high = task_figures(rec, "high")
    assert high["winner"] == "builtin:tf32" and high["final"] == 8.0 and high["reach"][20] == 8.0


def test_older_records_sum_attempt_times_and_say_so(tmp_path):
    rec = _rec([{"origin": "baseline:eager", "reason": "ok", "ms": 4.0, "seconds": 6.0},
                {"origin": "baseline:inductor", "reason": "ok", "ms": 2.0, "seconds": 7.0}])
    f = task_figures(rec, "highest")
    assert not f["recorded"] and f["winner_s"] == 13.0
    assert task_figures(_rec([], status="reference_failed"), "high") is None
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert main(["--records", str(path), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "README.md").read_text()
    assert "upper bounds" in text and "At \"highest\" (1 tasks)" in text
