"""benchmarks/channels_last_cost.py: each convolution task timed NCHW and through the built-in
channels-last wrapper, per dtype; a task the wrapper breaks is a row saying why, not a stop."""
import json

from benchmarks import channels_last_cost

CONV = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))

def get_inputs():
    return [torch.randn(2, 3, 8, 8)]

def get_init_inputs():
    return []
'''
# a view of the convolution's output: fine channels-first, refused on a channels-last tensor
VIEWED = CONV.replace("torch.relu(self.conv(x))", "self.conv(x).view(2, -1)")


def test_rows_per_task_and_dtype_and_the_summary(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"level_id": 1, "task_id": i, "ref_code": src})
                              for i, src in ((1, CONV), (2, VIEWED))) + "\n")
    out = tmp_path / "out"
    assert channels_last_cost.main(["--out", str(out), "--data", str(data), "--ids", "L1_1,L1_2",
                                    "--device", "cpu", "--dtypes", "fp32,bf16"]) == 0
    rows = {(r["id"], r["dtype"]): r for r in map(
        json.loads, (out / "channels_last_cost.jsonl").read_text().splitlines())}
    assert set(rows) == {(i, d) for i in ("L1_1", "L1_2") for d in ("fp32", "bf16")}
    for d in ("fp32", "bf16"):
        assert all(rows[("L1_1", d)][v] > 0 for v in channels_last_cost.VARIANTS)
        assert "view" in rows[("L1_2", d)]["error"]
    md = (out / "channels_last_cost.md").read_text()
    assert "fp32, best channels-last / best NCHW: geometric mean" in md
    assert "over 1 tasks" in md
    # resumable: a second run measures nothing again
    assert channels_last_cost.main(["--out", str(out), "--data", str(data), "--ids", "L1_1,L1_2",
                                    "--device", "cpu"]) == 0
    assert len((out / "channels_last_cost.jsonl").read_text().splitlines()) == 4
