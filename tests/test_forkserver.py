"""The fork-server template: children forked from it are verified like fresh interpreters, and a
template that goes away costs a fallback to a plain child, never a verdict."""
import os
import shutil
from pathlib import Path

import pytest
import torch
from helpers import run_python

from torch_cudal1.engines.baselines import baseline_candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, forkserver, prestart_children

TASK = Path(__file__).parent / "adversarial" / "tasks" / "linear_act.py"


def _count_forks(monkeypatch, mode: str | None = "1") -> list:
    """Fork-server mode ``mode`` (None: the default, auto); the list fills with the template
    used for each child forked."""
    if mode is None:
        monkeypatch.delenv("CUDAL1_VERIFY_FORKSERVER", raising=False)
    else:
        monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", mode)
    used = []
    spawn = forkserver.ForkServer.spawn

    def counting_spawn(self, *a, **k):
        used.append(self)
        return spawn(self, *a, **k)
    monkeypatch.setattr(forkserver.ForkServer, "spawn", counting_spawn)
    return used


def test_forked_children_and_a_vanished_template(monkeypatch):
    used = _count_forks(monkeypatch)
    task = Task.from_file(TASK)
    v, t = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted and t is not None
    assert len(used) == 1 and used[0].ready()     # the child was forked from the template
    srv = used[0]
    shutil.rmtree(srv.dir, ignore_errors=True)    # e.g. a temp-dir cleaner removed its socket
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2)
    assert v.accepted, v
    assert srv not in forkserver._SERVERS.values() and not srv.alive()


def test_off_means_plain_children_and_auto_forks_on_every_device(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    assert forkserver.mode() == "off"
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "1")
    assert forkserver.mode() == "always"
    monkeypatch.delenv("CUDAL1_VERIFY_FORKSERVER")
    assert forkserver.mode() == "auto"


def test_a_search_about_to_verify_forks_its_first_child_too(monkeypatch):
    """Started ahead of a search, the template serves its first verification: the child is
    forked, after the template is up, rather than a second torch import beside it."""
    used = _count_forks(monkeypatch, None)
    env = {"TEST_FORKSERVER_ENV": os.urandom(8).hex()}   # an environment of its own: a new template
    task = Task.from_file(TASK)
    prestart_children(extra_env=env)
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2, extra_env=env)
    assert v.accepted, v
    assert len(used) == 1 and used[0].ready()


def test_a_single_verification_pays_for_no_template(monkeypatch):
    used = _count_forks(monkeypatch, None)
    env = {"TEST_FORKSERVER_ENV": os.urandom(8).hex()}
    task = Task.from_file(TASK)
    v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2, extra_env=env)
    assert v.accepted, v
    assert used == []


def test_a_search_starts_the_template_only_where_it_verifies_more_than_once(monkeypatch):
    import torch_cudal1.search.loop as search
    from torch_cudal1.contracts import Timing, Verdict
    from torch_cudal1.options import Options
    started = []
    monkeypatch.setattr(search, "prestart_children", lambda *a, **k: started.append(1))
    monkeypatch.setattr(search, "evaluate", lambda *a, **k: (Verdict.ok(), Timing(1.0, 0.0, 200)))
    task = Task.from_file(TASK)
    for baselines, expect in (("eager", 0), ("eager,inductor", 1)):
        res = search.run_search(task, Options.resolve({"rounds": 0, "baselines": baselines,
                                                       "progress": False}), "cpu")
        res.cleanup()
        assert len(started) == expect, baselines


@pytest.mark.skipif(torch.version.cuda is None, reason="needs a CUDA build of torch")
def test_the_template_knows_when_forked_children_could_not_use_cuda():
    """Once the CUDA driver is initialised (as ``torch.cuda.is_available()`` does), torch
    refuses CUDA in forked children: the template must see that and not serve forks."""
    out = run_python(
        "import json, torch\n"
        "from torch_cudal1.verify.forkserver import _fork_is_safe\n"
        "before = _fork_is_safe()\n"
        "torch._C._cuda_getDeviceCount()\n"
        "print(json.dumps({'before': before, 'after': _fork_is_safe()}))\n")
    assert (out["before"], out["after"]) == (True, False)


@pytest.mark.gpu
def test_forked_children_verify_and_time_on_cuda(monkeypatch):
    used = _count_forks(monkeypatch)
    task = Task.from_file(TASK)
    for _ in range(2):
        v, t = evaluate(task, baseline_candidate(task, "inductor"), device="cuda", trials=2)
        assert v.accepted, v.detail
        assert t is not None and t.median_ms > 0
    assert len(used) == 2 and all(s.ready() for s in used)   # both forked from the template


def test_an_idle_template_retires_and_the_next_verification_starts_another(monkeypatch):
    """A process that compiled its model at start does not keep the template's interpreter:
    it exits after its idle time, and that is no failure (the next verification forks again)."""
    used = _count_forks(monkeypatch, None)
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER_IDLE_S", "1")
    env = {"TEST_FORKSERVER_ENV": os.urandom(8).hex()}
    task = Task.from_file(TASK)
    prestart_children(extra_env=env)
    for _ in range(3):   # a retirement never counts towards giving the template up
        v, _ = evaluate(task, baseline_candidate(task, "eager"), device="cpu", trials=2, extra_env=env)
        assert v.accepted, v
        used[-1].proc.wait(timeout=30)
        assert used[-1].retired()
    assert len(used) == 3 and len(set(map(id, used))) == 3


@pytest.mark.gpu
def test_by_default_a_search_on_cuda_forks_from_its_first_verification(monkeypatch):
    """The default (auto) on a GPU: the template started ahead of the search serves the first
    child too, and CUDA works in it."""
    used = _count_forks(monkeypatch, None)
    env = {"TEST_FORKSERVER_ENV": os.urandom(8).hex()}
    task = Task.from_file(TASK)
    prestart_children(extra_env=env)
    v, t = evaluate(task, baseline_candidate(task, "eager"), device="cuda", trials=2, extra_env=env)
    assert v.accepted, v.detail
    assert t is not None and t.median_ms > 0 and len(used) == 1
