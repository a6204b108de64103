"""The fork-server template: children forked from it are verified like fresh interpreters, and a
template that goes away costs a fallback to a plain child, never a verdict."""
import shutil
import time
from pathlib import Path

from torch_cudal1.baselines import baseline_candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, forkserver

TASK = Path(__file__).parent / "adversarial" / "tasks" / "linear_act.py"


def test_forked_children_and_a_vanished_template(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "1")
    task = Task.from_file(TASK)
    v, t = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted and t is not None
    servers = list(forkserver._SERVERS.values())
    assert servers and all(s.ready() for s in servers)
    # Forked: no interpreter start and no torch import in the child.
    t0 = time.monotonic()
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted and time.monotonic() - t0 < 2.0
    for s in servers:               # e.g. a temp-dir cleaner removed its socket
        shutil.rmtree(s.dir, ignore_errors=True)
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted, v
    assert all(s not in forkserver._SERVERS.values() for s in servers)


def test_off_means_plain_children(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    assert forkserver.mode("cpu") == "off"
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "auto")
    assert forkserver.mode("cpu") == "auto" and forkserver.mode("cuda:0") == "off"
