"""A round's candidates are built and verified in parallel; timing stays one at a time, and a
candidate rejected while building is never timed. On a GPU (``search.pipelines``) whole
verifications, timing included, run several at once, the device lock keeping timings apart."""
import threading
import time

import torch_cudal1.search.loop as search
from torch_cudal1.contracts import Candidate
from torch_cudal1.engines.base import Engine
from torch_cudal1.options import Options
from torch_cudal1.task import Task

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
'''

GOOD = '''
import time
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(1.5)          # stands in for a slow build
    def forward(self, x):
        return torch.clamp(x, min=0) * {scale}
'''


class ThreeCandidates(Engine):
    name = "scripted"

    def propose(self, task, history, ctx):
        if ctx.round > 1:
            return []
        return [Candidate(GOOD.format(scale="2"), origin="scripted:a"),
                Candidate(GOOD.format(scale="3"), origin="scripted:wrong"),
                Candidate(GOOD.format(scale="2.0"), origin="scripted:b")]


def _spy_on_evaluate(monkeypatch) -> list:
    """(origin, timed, start, end, trials) of every verification the search starts."""
    calls = []
    lock = threading.Lock()
    real = search.evaluate

    def spy(task, cand, **kw):
        t0 = time.monotonic()
        out = real(task, cand, **kw)
        with lock:
            calls.append((cand.origin, kw.get("time_it", True), t0, time.monotonic(),
                          kw.get("trials")))
        return out
    monkeypatch.setattr(search, "evaluate", spy)
    return calls


def test_builds_in_parallel_timing_serial(tmp_path, monkeypatch):
    calls = _spy_on_evaluate(monkeypatch)
    opts = Options.resolve({"baselines": "eager", "rounds": 2, "samples": 3, "trials": 2,
                            "parallel_builds": 3, "cache_dir": str(tmp_path)}, env={})
    result = search.run_search(Task(TASK), opts, "cpu", engine=ThreeCandidates())

    pre = [c for c in calls if not c[1]]
    timed = [c for c in calls if c[1]]
    assert sorted(c[0] for c in pre) == ["scripted:a", "scripted:b", "scripted:wrong"]
    # One draw sorts out the wrong ones; what is timed is verified on every draw again.
    assert all(c[4] == 1 for c in pre) and all(c[4] == 2 for c in timed)
    # The three build/verify children overlapped in time.
    assert max(c[2] for c in pre) < min(c[3] for c in pre)
    # The wrong one was rejected while building and never timed; timings never overlapped.
    assert "scripted:wrong" not in [c[0] for c in timed]
    spans = sorted((c[2], c[3]) for c in timed)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    by_origin = {a.candidate.origin: a for a in result.attempts}
    assert by_origin["scripted:wrong"].verdict.reason == "mismatch"
    assert by_origin["scripted:a"].verdict.accepted and by_origin["scripted:a"].timing
    result.cleanup()


def test_pipelined_candidates_are_verified_and_timed_once_several_at_a_time(tmp_path,
                                                                           monkeypatch):
    """Where the device lock keeps timings alone on the device (a GPU), each candidate gets one
    whole verification, timing included, beside its siblings: no separate parallel pre-check,
    the wrong one rejected for its reason, every attempt stamped with when its own verdict was
    in, and the baselines confirmed the same way."""
    calls = _spy_on_evaluate(monkeypatch)
    monkeypatch.setattr(search, "pipelines", lambda device: True)
    opts = Options.resolve({"baselines": "eager", "rounds": 1, "samples": 3, "trials": 2,
                            "parallel_builds": 3, "pipeline": True, "cache_dir": str(tmp_path)},
                           env={})
    result = search.run_search(Task(TASK), opts, "cpu", engine=ThreeCandidates())
    engine_calls = [c for c in calls if c[0].startswith("scripted:")]
    assert sorted(c[0] for c in engine_calls) == ["scripted:a", "scripted:b", "scripted:wrong"]
    assert all(c[1] and c[4] == 2 for c in engine_calls)     # verified in full and timed, once
    assert max(c[2] for c in engine_calls) < min(c[3] for c in engine_calls)   # side by side
    by_origin = {a.candidate.origin: a for a in result.attempts}
    assert by_origin["scripted:wrong"].verdict.reason == "mismatch"
    assert by_origin["scripted:a"].timing and by_origin["scripted:b"].timing
    assert [a.candidate.origin for a in result.attempts] == [
        "baseline:eager", "scripted:a", "scripted:wrong", "scripted:b"]
    ends = {c[0]: c[3] for c in engine_calls}
    for a in result.attempts[1:]:   # each verdict's own time, not when it was read
        assert abs(a.at_s - (ends[a.candidate.origin] - ends["scripted:a"]
                             + by_origin["scripted:a"].at_s)) < 0.5
    assert result.attempts[0].timing.extra["confirmed"]["median_ms"] > 0
    result.cleanup()


def test_out_of_memory_beside_siblings_is_verified_again_alone(tmp_path, monkeypatch):
    """A candidate that ran out of device memory while its siblings' children held theirs says
    nothing of itself: it is verified again alone (and timed when it passes), not rejected."""
    from torch_cudal1.contracts import Verdict
    calls = []
    real = search.evaluate

    def crowded(task, cand, **kw):
        calls.append((cand.origin, kw.get("time_it", True)))
        if cand.origin == "scripted:b" and kw.get("time_it") is False:   # beside its siblings
            return Verdict.reject("memory", "OutOfMemoryError: CUDA out of memory."), None
        return real(task, cand, **kw)
    monkeypatch.setattr(search, "evaluate", crowded)
    opts = Options.resolve({"baselines": "eager", "rounds": 1, "samples": 3, "trials": 1,
                            "parallel_builds": 3, "cache_dir": str(tmp_path)}, env={})
    result = search.run_search(Task(TASK), opts, "cpu", engine=ThreeCandidates())
    by_origin = {a.candidate.origin: a for a in result.attempts}
    assert ("scripted:b", True) in calls
    assert by_origin["scripted:b"].verdict.accepted and by_origin["scripted:b"].timing
    assert ("scripted:wrong", True) not in calls   # other rejections stay final
    result.cleanup()


HANGS = '''
import time
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(600)          # a build that would outlast any budget
    def forward(self, x):
        return x
'''


class OneHang(Engine):
    name = "scripted"

    def propose(self, task, history, ctx):
        return [Candidate(HANGS, origin="scripted:hang")] if ctx.round == 1 else []


def test_a_candidate_gets_what_is_left_of_the_budget_not_its_whole_limit(tmp_path, monkeypatch):
    """time_budget_s bounds the search's wall time: a candidate started near its end is killed
    when the budget runs out (with a floor of MIN_VERIFY_S), not after verify_timeout_s, and its
    verdict says which limit cut it. The baselines keep the full limit."""
    limits = {}
    real = search.evaluate
    left_after_baselines = 8.0   # room for a loaded host between the baselines and the hang
    budget = {}

    def spy(task, cand, **kw):
        limits.setdefault(cand.origin, []).append(kw["timeout_s"])
        out = real(task, cand, **kw)
        if cand.origin.startswith("baseline:"):
            # The budget ends a fixed time after the baselines, however long they took on a
            # loaded host (seconds of sandbox start-up and calibration on two busy cores).
            budget["s"] = time.monotonic() - budget["t0"] + left_after_baselines
            opts.time_budget_s = budget["s"]
        return out
    monkeypatch.setattr(search, "evaluate", spy)
    monkeypatch.setattr(search, "MIN_VERIFY_S", 3.0)
    for parallel in (1, 2):   # verified alone, and beside a sibling before timing
        engine = OneHang()
        if parallel == 2:
            engine.propose = lambda task, history, ctx: [
                Candidate(HANGS, origin="scripted:hang"),
                Candidate(GOOD.format(scale="2"), origin="scripted:a")] if ctx.round == 1 else []
        opts = Options.resolve({"baselines": "eager", "rounds": 1, "samples": 2, "trials": 1,
                                "parallel_builds": parallel, "time_budget_s": 600,
                                "verify_timeout_s": 120, "cache_dir": str(tmp_path)}, env={})
        budget["t0"] = time.monotonic()
        result = search.run_search(Task(TASK), opts, "cpu", engine=engine)
        after_baselines = time.monotonic() - budget["t0"] - (budget["s"] - left_after_baselines)
        assert after_baselines < 60
        hang = next(a for a in result.attempts if a.candidate.origin == "scripted:hang")
        assert hang.verdict.reason == "timeout" and "time budget" in hang.verdict.detail
        assert limits["baseline:eager"][0] == 120
        assert max(limits["scripted:hang"]) <= left_after_baselines + 1   # + the search's set-up
        limits.clear()
        result.cleanup()
