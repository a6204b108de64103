"""Warming a recipe fills the entries a serving process with automatic dynamic shapes asks for;
warming is resumable; dynamic graphs dispatch per exact shape to a cached winner or the fallback."""
import json
import pickle

import pytest

from helpers import run_python
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cli import main
from torch_cudal1.warm import WarmUnit, list_units, varying_dims

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

RECIPE = '''
import torch, torch.nn as nn
OPTIONS = {"baselines": "eager", "rounds": 0, "trials": 1}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)
    def forward(self, x):
        return torch.tanh(self.proj(x)) * 2

def models():
    torch.manual_seed(0)
    yield "net", Net, [(torch.randn(b, 16),) for b in (2, 4)]
'''

SERVE = """
import json, torch, torch_cudal1, torch_cudal1.counters as rt
import importlib.util
spec = importlib.util.spec_from_file_location("recipe", {recipe!r})
recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)
torch.manual_seed(0)
m = recipe.Net().eval()
c = torch.compile(m, backend="cudal1", options={{"mode": "cache-only"}})   # automatic dynamic
out = []
with torch.no_grad():
    for b in (2, 4, 2, 6):
        x = torch.randn(b, 16)
        before = torch_cudal1.stats().get("cache_hits", 0)
        err = (c(x) - m(x)).abs().max().item()
        out.append({{"batch": b, "err": err, "hit": rt.SEEN_KEYS[-1]["hit"] if rt.SEEN_KEYS else None}})
print(json.dumps({{"calls": out, "stats": torch_cudal1.stats(), "seen": [(k["key"], k["hit"]) for k in rt.SEEN_KEYS]}}))
"""


def test_units_of_recipes_and_task_folders(tmp_path):
    recipe = tmp_path / "r.py"
    recipe.write_text(RECIPE)
    units = list_units(recipe)
    assert [u.description for u in units] == ["net[0]: (2, 16) float32", "net[1]: (4, 16) float32"]
    assert pickle.loads(pickle.dumps(units[1])) == units[1]
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("a", "b"):
        (tasks / f"{name}.py").write_text(
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x + 1\ndef get_inputs():\n    return [torch.randn(3)]\n"
            "def get_init_inputs():\n    return []\n")
    assert [(u.model, u.kind) for u in list_units(tasks)] == [("a", "task"), ("b", "task")]
    import torch
    assert varying_dims([(torch.zeros(2, 5),), (torch.zeros(4, 5),)]) == {0: [0]}
    with pytest.raises(FileNotFoundError):
        list_units(tmp_path / "missing.py")
    assert main(["warm", str(tmp_path / "missing.py")]) == 2
    assert isinstance(units[0], WarmUnit)


def test_warm_then_serve_with_automatic_dynamic_shapes(tmp_path, capsys):
    recipe = tmp_path / "r.py"
    recipe.write_text(RECIPE)
    cache = tmp_path / "cache"
    rc = main(["warm", str(recipe), "--device", "cpu", "--cache-dir", str(cache), "--json"])
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")]
    assert rc == 0, lines
    units, summary = lines[:-1], lines[-1]
    # Per shape: the static graph (first shape a server sees) and the dynamic one (later shapes).
    assert [len(u["keys"]) for u in units] == [2, 2] and summary["searches"] == 4
    assert len(CacheStore(cache).keys()) == 4

    rc = main(["warm", str(recipe), "--device", "cpu", "--cache-dir", str(cache), "--json"])
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")]
    assert rc == 0 and lines[-1]["skipped"] == 2 and lines[-1]["run"] == 0      # resumable

    r = run_python(SERVE.format(recipe=str(recipe)), env={"CUDAL1_CACHE_DIR": str(cache)})
    calls = r["calls"]
    assert all(c["err"] < 1e-5 for c in calls)
    # 2: static graph; 4: automatic dynamic recompile; 2 again: the dynamic graph at batch 2;
    # 6: never warmed -> the fallback (cache-only), said once.
    assert [c["hit"] for c in calls] == [True, True, True, False], r["seen"]
    assert r["stats"].get("cache_hits") == 3 and r["stats"].get("cache_only_misses") == 1
    assert not r["stats"].get("searches")
