"""Every verifier process runs with glibc's malloc thresholds fixed at their maximums (heap.py),
so a timing does not depend on the process's allocation history: a fresh process would otherwise
unmap and re-fault a CPU graph's MiB-sized activations on every call."""
import os

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, heap, os_sandbox
from torch_cudal1.verify.runner import child_env

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        for i in range(4):
            layers += [nn.Conv2d(3 if i == 0 else 32, 32, 3, padding=1), nn.ReLU()]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(2, 3, 64, 64)]


def get_init_inputs():
    return []
'''

# Counts the page faults of its own graph's calls in the worker, then says how many (raising:
# the verdict's detail is the only thing it can say).
PROBE = TASK + '''

def _faults():
    with open("/proc/self/stat") as f:
        s = f.read()
    return int(s[s.rfind(")") + 2:].split()[7])   # minflt


_m, _x = Model(), get_inputs()
with torch.no_grad():
    for _ in range(3):
        _m(*_x)
    _f0 = _faults()
    for _ in range(10):
        _m(*_x)
    _f1 = _faults()
raise RuntimeError(f"faults per call: {(_f1 - _f0) / 10}")
'''


def test_the_worker_keeps_its_graphs_memory_between_calls(tmp_path):
    verdict, _ = evaluate(Task(TASK, name="convs"), Candidate(PROBE, origin="test:heap"),
                          device="cpu", trials=1, workdir=str(tmp_path / "wd"))
    detail = verdict.detail
    assert "faults per call: " in detail, (verdict.reason, detail)
    faults = float(detail.split("faults per call: ")[1].split()[0].rstrip(")'\""))
    # four 1 MiB activations a call: about 1,000 faults a call where glibc's thresholds are low,
    # a few dozen (up to about 50 on a busy host) where they are fixed: the bound sits between
    assert faults < 200, detail


def test_verifier_processes_get_the_thresholds_and_a_users_own_are_kept(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    env = child_env()
    for k, v in heap.HEAP_ENV.items():
        assert env[k] == v
        assert os_sandbox.scrubbed_env(env)[k] == v   # through to the sandboxed worker
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert child_env()["MALLOC_TRIM_THRESHOLD_"] == "131072"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000000")
    env = child_env()
    assert "MALLOC_MMAP_THRESHOLD_" not in env or \
        env["MALLOC_MMAP_THRESHOLD_"] == os.environ.get("MALLOC_MMAP_THRESHOLD_")
    assert os_sandbox.scrubbed_env(env)["GLIBC_TUNABLES"] == "glibc.malloc.trim_threshold=1000000"
