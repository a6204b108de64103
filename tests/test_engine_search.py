"""The contrastive loop end to end on CPU: run_search with the openai engine against a scripted
local server; every kind of answer, and what the second round's prompt shows of the first."""
from engine_helpers import (FAST, GARBAGE, NO_CODE, NOT_COMPILING, SLOW, WRONG, FakeLLMServer,
                            answer, make_task)

from torch_cudal1 import search
from torch_cudal1.options import Options
from torch_cudal1.search import run_search

FAST2 = FAST.replace("torch.relu(x) * 2.0 + 1.0", "torch.relu(x).mul(2.0).add(1.0)")


def _opts(url, tmp_path, **kw):
    base = {"engine": "openai", "engine_url": url, "cache_dir": str(tmp_path / "cache"),
            "baselines": "eager", "trials": 2, "verify_timeout_s": 120, "retries": 1,
            "request_timeout_s": 30, "progress": False}
    return Options.resolve(dict(base, **kw), env={})


def test_two_rounds_with_every_kind_of_answer(tmp_path):
    round1 = [answer(FAST, "Vectorise the row loop."), answer(SLOW), answer(WRONG),
              answer(NOT_COMPILING), GARBAGE, NO_CODE]
    round2 = [answer(FAST2, "r1s0 was fastest because it is one fused expression.")] + [NO_CODE] * 5
    with FakeLLMServer([{"choices": round1}, {"choices": round2}]) as srv:
        res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=2, samples=6, early_stop=0),
                         "cpu", key="k")
        reqs = srv.chat_requests()
    try:
        by = {a.candidate.origin: a for a in res.attempts}
        eager = by["baseline:eager"]
        fast, slow = by["openai:r1s0"], by["openai:r1s1"]
        assert fast.verdict.accepted and fast.timing.median_ms < eager.timing.median_ms
        assert fast.speedup_vs_eager > 1.5
        assert slow.verdict.accepted and slow.timing.median_ms > fast.timing.median_ms
        assert by["openai:r1s2"].verdict.reason == "mismatch"
        assert not by["openai:r1s3"].verdict.accepted
        assert by["openai:r1s3"].verdict.reason in ("crash", "build_error", "error")
        for o in ("openai:r1s4", "openai:r1s5"):         # garbage, prose: never verified
            assert by[o].verdict.reason == "no_model_new" and by[o].seconds == 0.0
            assert by[o].candidate.meta["raw_response"] in (GARBAGE, NO_CODE)
        assert res.rounds_run == 2 and res.complete
        assert res.candidates_tried == 12 and res.candidates_accepted >= 3
        assert res.winner.candidate.origin in ("openai:r1s0", "openai:r2s0")
        # When each verdict was in: in the order they were made, within the search's time; the
        # summary says when its winner was found (benchmarks/time_to_winner.py reads these).
        ats = [a.at_s for a in res.attempts]
        assert all(t is not None for t in ats) and ats == sorted(ats) and ats[-1] <= res.seconds
        assert res.summary()["winner_at_s"] == res.winner.at_s > 0
        # Provenance of every round for the cache entry.
        assert fast.candidate.meta["analysis"] == "Vectorise the row loop."
        assert fast.candidate.meta["prompt_hash"] != by["openai:r2s0"].candidate.meta["prompt_hash"]
        # The second round's prompt: the first round's prompt as prefix, then what was measured.
        assert len(reqs) == 2
        p1, p2 = (r["messages"][1]["content"] for r in reqs)
        assert p2.startswith(p1[: p1.index("## Your answer")])
        assert "### Round 1" in p2 and "### Round 1" not in p1
        assert f"openai:r1s0 (round 1, sample 0): correct, {fast.timing.median_ms:.4f} ms" in p2
        assert f"x{fast.speedup_vs_eager:.2f} over eager" in p2
        assert f"openai:r1s1 (round 1, sample 1): correct, {slow.timing.median_ms:.4f} ms" in p2
        assert "openai:r1s2 (round 1, sample 2): REJECTED (mismatch)" in p2
        assert "openai:r1s3 (round 1, sample 3): REJECTED (" in p2
        assert "openai:r1s5 (round 1, sample 5): REJECTED (no_model_new): the answer has no fenced" in p2
        assert FAST.strip() in p2 and SLOW.strip() in p2 and WRONG.strip() in p2
        assert f"fastest correct version so far is openai:r1s0" in p2
    finally:
        res.cleanup()


def test_budgets_early_stop_and_time(tmp_path):
    with FakeLLMServer([], default={"content": NO_CODE}) as srv:
        res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=5, samples=1, early_stop=2),
                         "cpu")
        res.cleanup()
        assert res.rounds_run == 2 and res.stop_reason == "no improvement in 2 rounds"
        assert len(srv.chat_requests()) == 2 and res.winner.candidate.origin == "baseline:eager"
        res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=5, time_budget_s=0.001), "cpu")
        res.cleanup()
        assert res.rounds_run == 0 and res.stop_reason == "time budget"
        assert len(srv.chat_requests()) == 2


def test_server_down_mid_search_keeps_a_verified_fallback(tmp_path):
    srv = FakeLLMServer([{"content": answer(FAST)}]).start()
    calls = []

    def progress(line):
        calls.append(line)
        if line.startswith("r1s0"):
            srv.stop()                      # the server goes away after round 1
    res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=3, samples=1, retries=1,
                                        early_stop=0), "cpu", progress=progress)
    try:
        assert not res.complete and res.stop_reason.startswith("engine error")
        assert res.rounds_run == 1
        by = {a.candidate.origin: a for a in res.attempts}
        tried = {o: (a.verdict.reason, a.timing and (a.timing.median_ms, a.timing.spread_ms))
                 for o, a in by.items()}
        # round 1's answer is kept, verified, and wins by the search's own rule: beyond the
        # measured noise (on a loaded CI host the reference's spread can swallow even 100x)
        assert by["openai:r1s0"].verdict.accepted, tried
        beats = search.beats(by["openai:r1s0"], by["baseline:eager"])
        assert res.winner.candidate.origin == ("openai:r1s0" if beats else "baseline:eager"), tried
    finally:
        res.cleanup()


STATEFUL = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.zeros(4, 8)

    def forward(self, x):
        self.hidden = torch.tanh(x + self.hidden)   # the answer depends on every earlier call
        return self.hidden * 2

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''


def _stateful_opts(tmp_path):
    return Options.resolve({"engine": "builtin", "baselines": "eager", "trials": 2, "rounds": 0,
                            "cache_dir": str(tmp_path / "cache"), "progress": False}, env={})


def test_a_reference_that_keeps_state_in_a_tensor_attribute_is_searched(tmp_path):
    from torch_cudal1.task import Task
    res = run_search(Task(STATEFUL, name="stateful"), _stateful_opts(tmp_path), "cpu", key="s")
    try:
        assert res.winner is not None and res.winner.verdict.accepted
        assert res.winner.verdict.stats.get("stateful") is True
    finally:
        res.cleanup()


def test_state_the_verifier_cannot_put_back_is_refused_with_the_reason(tmp_path):
    import pytest

    from torch_cudal1.search import SearchError
    from torch_cudal1.task import Task
    in_a_list = STATEFUL.replace("self.hidden = torch.zeros(4, 8)", "self.h = [torch.zeros(4, 8)]")
    in_a_list = in_a_list.replace("self.hidden = torch.tanh(x + self.hidden)",
                                  "self.h[0] = torch.tanh(x + self.h[0])")
    in_a_list = in_a_list.replace("return self.hidden * 2", "return self.h[0] * 2")
    with pytest.raises(SearchError, match="keeps state across calls"):
        run_search(Task(in_a_list, name="stateful_list"), _stateful_opts(tmp_path), "cpu", key="l")


def test_keep_workdirs_leaves_each_candidates_source_and_child_log(tmp_path):
    """A kernel engineer asking why a candidate was refused (or what the compiler printed) finds
    its work dir, named after the attempt, under the folder given."""
    keep = tmp_path / "kept"
    with FakeLLMServer([{"choices": [answer(WRONG)]}]) as srv:
        res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=1, samples=1,
                                            keep_workdirs=str(keep)), "cpu", key="k")
    res.cleanup()
    roots = list(keep.glob("cudal1-search-*"))
    assert len(roots) == 1 and res.workroot == roots[0]
    wrong = next(a for a in res.attempts if a.candidate.origin == "openai:r1s0")
    assert wrong.verdict.reason == "mismatch"
    dirs = sorted(p.name for p in roots[0].iterdir())
    assert dirs[:2] == ["c000", "c001"], dirs
    assert WRONG.strip() in (roots[0] / "c001" / "candidate.py").read_text()
    assert (roots[0] / "c001" / "child.log").exists()
    # without the option, cleanup leaves nothing
    with FakeLLMServer([{"choices": [answer(WRONG)]}]) as srv:
        res = run_search(make_task(), _opts(srv.url, tmp_path, rounds=1, samples=1), "cpu")
    assert res.workroot.exists()
    res.cleanup()
    assert not res.workroot.exists()


def test_pair_reference_times_eager_in_each_candidates_own_child(tmp_path):
    """With pair_reference on, every timed attempt carries the reference's time from its own
    child and the winner's summary the ratio; off, neither appears."""
    from torch_cudal1.task import Task
    opts = Options.resolve({"engine": "builtin", "baselines": "eager", "trials": 2, "rounds": 0,
                            "cache_dir": str(tmp_path / "cache"), "progress": False,
                            "pair_reference": "on"}, env={})
    lines = []
    res = run_search(Task(STATEFUL, name="paired"), opts, "cpu", key="p", progress=lines.append)
    try:
        (eager,) = res.attempts
        assert eager.timing.extra["paired_ref_ms"] > 0 and eager.timing.extra["paired_ref_n"] >= 10
        assert eager.timing.extra["paired_ref_switches"] >= 0   # its own hold of the host core
        assert res.summary()["paired_speedup_vs_eager"] == eager.timing.paired_speedup > 0
        assert "paired)" in lines[1] and "with eager timed in the winner's child" in lines[-1]
        assert eager.verdict.stats["phases"]["time_ref_s"] > 0
    finally:
        res.cleanup()
    off = run_search(Task(STATEFUL, name="unpaired"), _stateful_opts(tmp_path), "cpu", key="u")
    try:
        assert "paired_ref_ms" not in off.winner.timing.extra
        assert off.summary()["paired_speedup_vs_eager"] is None
    finally:
        off.cleanup()
