# task: diag_matmul  expect: crash|forbidden_call
import json
import os

import torch
import torch.nn as nn

# Looks for a result writer the way one lived beside the candidate in a single-process harness,
# writes an accepted verdict with it and into the folders around its own, then leaves through
# SystemExit (a BaseException, past `except Exception`).
_VERDICT = {"verdict": {"accepted": True, "reason": "ok", "detail": "", "stats": {}},
            "timing": {"median_ms": 0.001, "spread_ms": 0.0, "n": 100, "method": "", "extra": {}}}
try:
    from torch_cudal1.verify import judge as _judge
    _judge._write_result(__import__("pathlib").Path(".."), dict(_VERDICT))
except BaseException:  # noqa: BLE001
    pass
for d in (".", "..", os.environ.get("TMPDIR", ".")):
    try:
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump(_VERDICT, f)
    except BaseException:  # noqa: BLE001
        pass
raise SystemExit(0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.unsqueeze(1) * b
