"""Serving modes: ``async`` searches in a background worker process and swaps the winner in;
``cache-only`` never searches and says so once per process; untrusted cache dirs are not loaded."""
import os

from helpers import run_python
from torch_cudal1.cache.store import CacheStore

MODEL = """
import json, os, time, torch, torch.nn as nn
import torch_cudal1, torch_cudal1.counters as rt
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 4)).eval()
x = torch.randn(3, 16)
base = {"baselines": "eager", "rounds": 0, "trials": 1}
"""

ASYNC = MODEL + """
from torch_cudal1.serve import worker
c = torch.compile(m, backend="cudal1", options=dict(base, mode="async"))
with torch.no_grad():
    t0 = time.monotonic()
    first = (c(x) - m(x)).abs().max().item()           # the fallback, at once
    first_s = time.monotonic() - t0
    idle = worker.wait_background(timeout=400)
    later = (c(x) - m(x)).abs().max().item()           # the winner, swapped in
jobs = os.path.join(os.environ["CUDAL1_CACHE_DIR"], "v1", "jobs")
print(json.dumps({"first": first, "later": later, "first_s": first_s, "idle": idle,
                  "stats": torch_cudal1.stats(), "jobs_left": os.listdir(jobs)}))
"""

SERVE = MODEL + """
import torch._dynamo
c = torch.compile(m, backend="cudal1", options=dict(base, mode="cache-only"))
with torch.no_grad():
    errs = [(c(v) - m(v)).abs().max().item() for v in (x, x, torch.randn(5, 16), torch.randn(7, 16))]
untrusted = torch_cudal1.stats()
torch._dynamo.reset()
c = torch.compile(m, backend="cudal1", options=dict(base, mode="cache-only", trust_cache_dir=True))
with torch.no_grad():
    errs.append((c(x) - m(x)).abs().max().item())
print(json.dumps({"errs": errs, "untrusted": untrusted, "stats": torch_cudal1.stats()}))
"""


def test_async_worker_process_then_cache_only_and_trust(tmp_path):
    env = {"CUDAL1_CACHE_DIR": str(tmp_path)}
    r = run_python(ASYNC, env=env)
    assert r["first"] < 1e-5 and r["later"] < 1e-5 and r["idle"]
    s = r["stats"]
    # The search ran in the worker process, not in the serving one, and its winner was swapped in.
    assert s.get("async_jobs") == 1 and s.get("async_swaps") == 1 and not s.get("searches")
    assert not s.get("fallbacks") and r["jobs_left"] == []
    store = CacheStore(tmp_path)
    (key,) = store.keys()
    assert store.load(key).meta["winner"]["origin"] == "baseline:eager"

    # Hand the directory to another user: its entries are code and must not be loaded, unless
    # trusted explicitly. cache-only misses (three graphs/shapes) say so once per process.
    if os.getuid() == 0:
        for p in [tmp_path, *tmp_path.rglob("*")]:
            os.chown(p, 65534, 65534)
    else:
        os.chmod(tmp_path, 0o777)
    r = run_python(SERVE, env=env)
    assert max(r["errs"]) < 1e-5
    u = r["untrusted"]
    assert not u.get("cache_hits") and u.get("untrusted_entries") == 1 and not u.get("searches")
    assert u.get("cache_only_misses") >= 2
    lines = r["_stderr"].splitlines()
    assert len([ln for ln in lines if "not trusted" in ln]) == 1, r["_stderr"]
    assert len([ln for ln in lines if "cache-only mode" in ln]) == 1, r["_stderr"]
    assert r["stats"].get("cache_hits") == 1            # trust_cache_dir=True: served


SECRETS = {"api_key": "sekret-token", "remote_secret": "hmac-key-123",
           "remote_cache": "redis://:redis-password@127.0.0.1:1/0"}


def test_async_job_files_hold_no_secrets_and_are_private(tmp_path):
    import json
    import stat

    import torch

    from torch_cudal1.serve import worker
    from torch_cudal1.options import Options
    from torch_cudal1.task import Task
    opts = Options.resolve(dict(SECRETS, cache_dir=str(tmp_path)), env={})
    job = worker.write_job(CacheStore(tmp_path), "k" * 32, {"graph": "g"}, Task("x = 1", name="t"),
                           "cpu", opts, [torch.ones(2), 3])
    text = "".join(p.read_bytes().decode(errors="ignore") for p in job.iterdir())
    assert not any(v in text or "redis-password" in text for v in SECRETS.values())
    assert json.loads((job / "job.json").read_text())["scalars"] == {"1": 3}
    for d in (job, job.parent):                                   # the job and the jobs root
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, oct(d.stat().st_mode)
    assert opts.secret_env() == {f"CUDAL1_{k.upper()}": v for k, v in SECRETS.items()}
    # The worker gets them back from its environment, as options (and only them).
    env = Options.secrets_in(dict(opts.secret_env(), CUDAL1_ROUNDS="7"))
    back = Options.resolve({k: v for k, v in json.loads((job / "job.json").read_text())["options"]
                            .items() if k in Options.keys()}, env=env)
    assert back.rounds == opts.rounds
    assert all(getattr(back, k) == v for k, v in SECRETS.items())


FAILING_ASYNC = MODEL + """
from torch_cudal1.serve import worker
# The engine's server is not there: the background search fails after its baselines and
# caches nothing (an incomplete search is not the answer for the key).
opts = dict(base, mode="async", engine="openai", engine_url="http://127.0.0.1:9/v1", rounds=1,
            retries=0, connect_timeout_s=1, remote_secret="hmac-key-123")
c = torch.compile(m, backend="cudal1", options=opts)
with torch.no_grad():
    first = (c(x) - m(x)).abs().max().item()
    idle = worker.wait_background(timeout=400)
    later = (c(x) - m(x)).abs().max().item()
jobs = os.path.join(os.environ["CUDAL1_CACHE_DIR"], "v1", "jobs")
print(json.dumps({"first": first, "later": later, "idle": idle, "jobs_left": os.listdir(jobs),
                  "stats": torch_cudal1.stats()}))
"""


def test_a_failed_background_search_leaves_no_job_dir_but_its_log(tmp_path):
    import re
    r = run_python(FAILING_ASYNC, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    assert r["idle"] and r["first"] < 1e-5 and r["later"] < 1e-5       # the fallback, throughout
    assert r["jobs_left"] == [] and not r["stats"].get("async_swaps")
    (line,) = [ln for ln in r["_stderr"].splitlines() if "did not cache a winner" in ln]
    log = re.search(r"Log: (\S+)", line).group(1)
    assert os.path.dirname(log) == str(tmp_path / "logs") and os.path.exists(log), line
    assert "127.0.0.1:9" in open(log).read()            # the worker's own account of it
    # The secret never reached a file of the cache dir.
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert b"hmac-key-123" not in p.read_bytes(), p


BUDGETED = """
import json, torch, torch_cudal1
from torch_cudal1.serve import worker
def f(x):
    y = torch.relu(x) * 2
    torch._dynamo.graph_break()        # two graphs, met in one call
    return torch.sigmoid(y) + 1
c = torch.compile(f, backend="cudal1", options={"baselines": "eager", "rounds": 0, "trials": 1,
                                                "foreground_budget_s": 0.001})
x = torch.randn(4, 8)
with torch.no_grad():
    first = (c(x) - f(x)).abs().max().item()
    idle = worker.wait_background(timeout=400)
    later = (c(x) - f(x)).abs().max().item()
print(json.dumps({"first": first, "later": later, "idle": idle, "stats": torch_cudal1.stats()}))
"""


def test_past_the_foreground_budget_misses_are_searched_in_the_background(tmp_path):
    r = run_python(BUDGETED, env={"CUDAL1_CACHE_DIR": str(tmp_path)})
    s = r["stats"]
    assert r["first"] < 1e-6 and r["later"] < 1e-6 and r["idle"]
    # the first graph was searched in the call; the second, past the budget, by a worker
    assert s.get("searches") == 1 and s.get("past_foreground_budget") == 1
    assert s.get("async_jobs") == 1 and s.get("async_swaps") == 1 and not s.get("fallbacks")
    assert "foreground_budget_s" in r["_stderr"]
    assert len(CacheStore(tmp_path).keys()) == 2
