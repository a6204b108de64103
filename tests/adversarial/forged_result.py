# task: diag_matmul  expect: crash|forbidden_call
import json
import os

import torch
import torch.nn as nn

# Writes an "accepted" result itself and leaves before the harness can check anything.
with open("result.json", "w") as f:
    json.dump({"verdict": {"accepted": True, "reason": "ok", "detail": "", "stats": {}},
               "timing": {"median_ms": 1e-6, "spread_ms": 0.0, "n": 1, "method": "", "extra": {}}}, f)
getattr(os, "_ex" + "it")(0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a
