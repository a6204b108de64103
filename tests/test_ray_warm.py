"""Ray warming on a real local Ray cluster (CPU slots stand in for GPUs) with a real Redis as the
shared tier: results reach a fresh machine through Redis, and a worker killed mid-task is retried."""
import io
import json
import os
import textwrap

import pytest

from test_remote_cache import RedisServer, require_redis

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[default]')")

RECIPE = '''
import os, torch, torch.nn as nn

MARKER = {marker!r}
DYNAMIC = False          # one static graph per input set: one key per unit


@torch._dynamo.disable
def _first_attempt_dies():
    # Kill the worker process on the first attempt only (a crashed GPU worker, an OOM kill).
    if MARKER and not os.path.exists(MARKER):
        with open(MARKER, "a") as f:
            f.write(str(os.getpid()))
        os._exit(17)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, {width}), nn.Linear({width}, 4)

    def forward(self, x):
        _first_attempt_dies()
        return self.fc2(torch.tanh(self.fc1(x)))


def models():
    torch.manual_seed(0)
    yield "net", Net().eval(), [[torch.randn(b, 16)] for b in {batches!r}]
'''

OPTIONS = {"baselines": "eager", "rounds": 0, "trials": 1, "progress": False}


def _recipe(path, *, width=24, batches=(2, 3), marker=""):
    path.write_text(textwrap.dedent(RECIPE.format(marker=marker, width=width, batches=list(batches))))
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_redis()
    redis_server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                     [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.environ.get("PYTHONPATH", "")])}})
        yield redis_server
        ray.shutdown()
    finally:
        redis_server.stop()      # also when ray.init fails: no redis-server left behind


def test_ray_warm_fills_the_shared_tier_for_a_fresh_machine(tmp_path, cluster):
    from torch_cudal1.cache.store import CacheStore
    from torch_cudal1.distributed import ray_warm
    recipe = _recipe(tmp_path / "recipe.py")
    opts = dict(OPTIONS, remote_cache=cluster.url, cache_dir=str(tmp_path / "workers"))
    log = io.StringIO()
    results = ray_warm.run(recipe, None, opts, "cpu", cpus_per_task=1, stream=log)
    assert [r["ok"] for r in results] == [True, True], results
    assert all(r["uploaded"] for r in results)
    lines = log.getvalue().splitlines()
    assert sum(line.startswith(("[1/2]", "[2/2]")) for line in lines) == 2
    assert lines[-1].startswith("ray warm: 2/2 units done") and "0 failed" in lines[-1]
    keys = sorted(CacheStore(tmp_path / "workers").keys())
    assert len(keys) == 2
    r = cluster.client()
    assert all(r.get(f"cudal1:index:{k}") for k in keys)

    # A serving machine with an empty cache dir, cache-only: both shapes come from Redis.
    import torch
    import torch_cudal1.counters as rt
    from torch_cudal1.warm import list_units, warm_unit
    rt.STATS.clear()
    serving = dict(OPTIONS, remote_cache=cluster.url, cache_dir=str(tmp_path / "serving"),
                   mode="cache-only")
    for unit in list_units(recipe):
        warm_unit(unit, serving, "cpu")
    torch._dynamo.reset()
    assert rt.STATS.get("remote_hits") == 2 and not rt.STATS.get("searches")
    assert not rt.STATS.get("fallbacks") and not rt.STATS.get("cache_misses")
    assert sorted(CacheStore(tmp_path / "serving").keys()) == keys


def test_a_worker_killed_mid_task_is_retried_on_another_worker(tmp_path, cluster):
    from torch_cudal1.distributed import ray_warm
    marker = tmp_path / "died"
    recipe = _recipe(tmp_path / "recipe.py", width=40, batches=(5,), marker=str(marker))
    opts = dict(OPTIONS, remote_cache=cluster.url, cache_dir=str(tmp_path / "workers"))
    log = io.StringIO()
    (result,) = ray_warm.run(recipe, None, opts, "cpu", cpus_per_task=1, max_retries=2,
                             stream=log)
    assert marker.exists(), "the first attempt never ran"
    assert result["ok"], result
    assert result["pid"] != int(marker.read_text())       # a different worker process finished it
    assert "1/1 units done" in log.getvalue()


def test_exhausted_retries_are_reported_not_raised(tmp_path, cluster):
    from torch_cudal1.distributed import ray_warm
    bad = tmp_path / "recipe.py"
    bad.write_text(RECIPE.format(marker="", width=8, batches=[2]).replace(
        "return self.fc2", "raise ValueError('broken model')\n        return self.fc2"))
    opts = dict(OPTIONS, remote_cache=cluster.url, cache_dir=str(tmp_path / "workers"),
                strict=True)
    log = io.StringIO()
    (result,) = ray_warm.run(str(bad), None, opts, "cpu", cpus_per_task=1, max_retries=1,
                             stream=log)
    assert not result["ok"] and "broken model" in result["error"]
    assert "FAILED" in log.getvalue() and "1 failed" in log.getvalue().splitlines()[-1]


def test_cudal1_warm_ray_cli_joins_a_running_cluster(tmp_path, cluster):
    import subprocess
    import sys
    from torch_cudal1.cache.store import CacheStore
    recipe = _recipe(tmp_path / "recipe.py", width=12, batches=(4,))
    address = ray.get_runtime_context().gcs_address
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "torch_cudal1", "warm", recipe, "--ray", address, "--device", "cpu",
         "--cache-dir", str(tmp_path / "cache"), "-o", "baselines=eager", "-o", "rounds=0",
         "-o", "trials=1", "-o", f"remote_cache={cluster.url}"],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"units": 1, "skipped": 0, "failed": 0}
    assert "[1/1] net[0]" in proc.stderr and "ray warm: 1/1 units done" in proc.stderr
    (key,) = CacheStore(tmp_path / "cache").keys()
    assert cluster.client().get(f"cudal1:index:{key}")
    again = subprocess.run(proc.args, capture_output=True, text=True, timeout=600, env=env)
    assert again.returncode == 0, again.stderr[-3000:]     # resumable: the warm unit is skipped
    assert json.loads(again.stdout.splitlines()[-1]) == {"units": 0, "skipped": 1, "failed": 0}


def test_cli_flags_reach_the_ray_tasks(monkeypatch):
    import argparse
    from torch_cudal1.distributed import ray_warm
    parser = argparse.ArgumentParser()
    parser.add_argument("recipe")
    parser.add_argument("--ray", nargs="?", const="", default=None)
    ray_warm.add_cli_arguments(parser)
    seen = {}
    monkeypatch.setattr(ray_warm, "run", lambda *a, **k: seen.update(args=a, kwargs=k) or [])
    args = parser.parse_args(["r.py", "--ray", "--ray-cpus-per-task", "2",
                              "--ray-device-kinds", "H100, A100", "--ray-max-retries", "5"])
    ray_warm.run_cli(args, {"rounds": 0}, "cuda", units=["u"])
    assert seen["args"] == ("r.py", None, {"rounds": 0}, "cuda")
    assert seen["kwargs"] == {"device_kinds": ["H100", "A100"], "gpus_per_task": None,
                              "cpus_per_task": 2.0, "max_retries": 5, "units": ["u"]}


def test_ray_missing_gives_a_clear_message(monkeypatch):
    import builtins
    from torch_cudal1.distributed import ray_warm
    real_import = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RuntimeError, match=r"pip install"):
        ray_warm._import_ray()


def test_options_are_checked_before_anything_is_scheduled(tmp_path):
    from torch_cudal1.distributed import ray_warm
    with pytest.raises(ValueError, match="unknown torch_cudal1 option"):
        ray_warm.run(str(tmp_path / "none.py"), None, {"remote_cahce": "redis://x"}, "cpu")
