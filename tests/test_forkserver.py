"""The fork-server template: children forked from it are verified like fresh interpreters, and a
template that goes away costs a fallback to a plain child, never a verdict."""
import shutil
from pathlib import Path

from torch_cudal1.baselines import baseline_candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, forkserver

TASK = Path(__file__).parent / "adversarial" / "tasks" / "linear_act.py"


def test_forked_children_and_a_vanished_template(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "1")
    used = []
    spawn = forkserver.ForkServer.spawn

    def counting_spawn(self, *a, **k):
        used.append(self)
        return spawn(self, *a, **k)
    monkeypatch.setattr(forkserver.ForkServer, "spawn", counting_spawn)
    task = Task.from_file(TASK)
    v, t = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted and t is not None
    assert len(used) == 1 and used[0].ready()     # the child was forked from the template
    srv = used[0]
    shutil.rmtree(srv.dir, ignore_errors=True)    # e.g. a temp-dir cleaner removed its socket
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted, v
    assert srv not in forkserver._SERVERS.values() and not srv.alive()


def test_off_means_plain_children(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    assert forkserver.mode("cpu") == "off"
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "auto")
    assert forkserver.mode("cpu") == "auto" and forkserver.mode("cuda:0") == "off"
