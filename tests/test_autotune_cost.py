"""benchmarks/autotune_cost.py: each max-autotune attempt's verification beside the number of
shapes its graph gives inductor to tune (where the engine's shape budget comes from)."""
import json

from benchmarks import autotune_cost

CONVS = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3)
        self.b = nn.Conv2d(4, 5, 3)
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        return self.fc(self.b(self.a(x)).mean((2, 3)))

def get_inputs():
    return [torch.randn(2, 3, 12, 12)]

def get_init_inputs():
    return []
'''


def test_each_max_autotune_record_gets_its_graphs_shape_count_and_outcome(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"level_id": 3, "task_id": 1, "ref_code": CONVS}) + "\n")
    ok = {"origin": "builtin:inductor-max-autotune", "reason": "ok", "phases": {"verify_s": 4.25}}
    recs = [{"id": "L3_1", "attempts": [ok]},   # replaced by the later record
            {"id": "L3_1", "attempts": [dict(ok, reason="timeout", phases=None),
                                        {"origin": "builtin:tf32+inductor-max-autotune",
                                         "reason": "ok", "phases": {"verify_s": 7.0}}]},
            {"id": "L3_2", "attempts": [{"origin": "baseline:eager", "reason": "ok"}]}]
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    out = tmp_path / "cost.jsonl"
    assert autotune_cost.main(["--results", str(results), "--data", str(data),
                               "--out", str(out)]) == 0
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]   # L3_2 never tried it
    assert row == {"id": "L3_1", "inductor-max-autotune": "timeout",
                   "tf32+inductor-max-autotune": "7.0", "shapes": 3}   # two convolutions, addmm
    text = capsys.readouterr().out
    assert "| L3_1 | 3 | timeout | 7.0 |" in text
    assert "Timed out: 1, shapes [3]." in text
