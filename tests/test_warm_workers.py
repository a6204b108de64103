"""``cudal1 warm --workers N``: one worker process per GPU (CUDA_VISIBLE_DEVICES per worker)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RECIPE = '''
import torch, torch.nn as nn
OPTIONS = {"baselines": "eager", "rounds": 0, "trials": 1}
DYNAMIC = False

def models():
    torch.manual_seed(0)
    yield "mlp", nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)), \\
        [(torch.randn(b, 32),) for b in (1, 2, 4, 8)]
'''


def _warm(tmp_path, *extra):
    recipe = tmp_path / "r.py"
    recipe.write_text(RECIPE)
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDAL1_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "torch_cudal1", "warm", str(recipe), "--json", *extra],
                       env=env, capture_output=True, text=True, timeout=900)
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    return p.returncode, lines, p.stderr


def test_two_cpu_workers_share_the_units(tmp_path):
    rc, lines, err = _warm(tmp_path, "--workers", "2", "--device", "cpu")
    assert rc == 0, err[-3000:]
    units = [ln for ln in lines if "keys" in ln]
    assert len(units) == 4 and all(u["searches"] == 1 and not u["fallbacks"] for u in units)
    assert len({u["pid"] for u in units}) == 2 and os.getpid() not in {u["pid"] for u in units}


@pytest.mark.gpu
def test_one_worker_per_gpu(tmp_path):
    import torch
    n = min(torch.cuda.device_count(), 4)
    if n < 2:
        pytest.skip("needs at least 2 GPUs")
    rc, lines, err = _warm(tmp_path, "--workers", str(n), "--device", "cuda")
    assert rc == 0, err[-3000:]
    units = [ln for ln in lines if "keys" in ln]
    assert len(units) == 4 and all(u["searches"] == 1 and not u["fallbacks"] for u in units)
    # Every worker sees exactly one GPU, and different workers see different ones.
    by_pid = {u["pid"]: u["cuda_visible_devices"] for u in units}
    assert all(v is not None and "," not in v for v in by_pid.values())
    assert len(set(by_pid.values())) == len(by_pid)
    rc, lines, err = _warm(tmp_path, "--workers", str(n), "--device", "cuda")
    assert rc == 0 and lines[-1]["skipped"] == 4
