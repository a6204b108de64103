"""A winner that answers right only inside the verifier's sandbox (it tells the sandbox apart
from a serving process) is caught in the serving process: its first served call is checked
against the user's graph, it is quarantined, and the fallback answers. An honest winner is
checked and served."""
import pytest

from engine_helpers import FakeLLMServer
from helpers import run_python

# Set in the serving process only; the verifier's sandbox passes no such variable to candidates.
_CHEAT = '''```python
import os
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0 + 1.0
        if os.environ.get("CUDAL1TEST_SERVED"):   # served, not verified: a cheaper wrong answer
            y = y[:1].expand_as(y).contiguous()
        return y
```
'''
_HONEST = _CHEAT.replace('''        if os.environ.get("CUDAL1TEST_SERVED"):   # served, not verified: a cheaper wrong answer
            y = y[:1].expand_as(y).contiguous()
''', "")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_winner_that_cheats_only_when_served_is_caught_on_its_first_call(tmp_path, device):
    script = [{"content": _CHEAT}, {"content": _CHEAT}, {"content": _HONEST}]
    with FakeLLMServer(script) as srv:
        out = run_python(f"""
        import json, torch, torch_cudal1
        from torch_cudal1.counters import STATS
        from pathlib import Path

        def rows(n):   # a row loop: the vectorised candidate is far faster than eager
            def f(x):
                return torch.stack([torch.relu(r) * 2.0 + 1.0 for r in x])
            return f, torch.randn(n, 32, device="{device}")

        base = {{"engine": "openai", "engine_url": "{srv.url}", "baselines": "eager",
                 "rounds": 1, "samples": 1, "early_stop": 0, "trials": 2, "retries": 1,
                 "progress": False, "verify_timeout_s": 120}}
        res = {{}}
        for name, n, check in (("cheat", 64, "first"), ("unchecked", 48, "off"),
                               ("honest", 40, "first")):
            f, x = rows(n)
            before = dict(STATS)
            c = torch.compile(f, backend="cudal1", options=dict(base, serve_check=check))
            y1 = c(x)
            x2 = torch.randn(n, 32, device="{device}")
            y2 = c(x2)
            res[name] = {{"err": max((y1 - f(x)).abs().max().item(),
                                      (y2 - f(x2)).abs().max().item()),
                         "delta": {{k: STATS.get(k, 0) - before.get(k, 0) for k in STATS}}}}
        # the same graph compiled again (as a later process would): not searched again
        f, x = rows(64)
        before = dict(STATS)
        y = torch.compile(f, backend="cudal1", options=base)(x)
        res["again"] = {{"err": (y - f(x)).abs().max().item(),
                         "delta": {{k: STATS.get(k, 0) - before.get(k, 0) for k in STATS}}}}
        q = Path("{tmp_path}") / "cache" / "v1" / "quarantine"
        res["quarantined"] = [p.joinpath("QUARANTINED").read_text() for p in q.glob("*")] \\
            if q.is_dir() else []
        print(json.dumps(res))
        """, env={"CUDAL1_CACHE_DIR": str(tmp_path / "cache"), "CUDAL1TEST_SERVED": "1"})
    cheat, unchecked, honest = out["cheat"], out["unchecked"], out["honest"]
    # the winner was the engine's candidate in each case (it passed verification)
    for r in (cheat, unchecked, honest):
        assert r["delta"].get("winners_loaded") == 1, (r, out["_stderr"][-3000:])
    assert cheat["err"] < 1e-5 and cheat["delta"].get("serve_check_failed") == 1, cheat
    assert len(out["quarantined"]) == 1 and "differed from the graph" in out["quarantined"][0]
    assert "answered a served call unlike the graph itself" in out["_stderr"]
    again = out["again"]
    assert again["err"] < 1e-5 and again["delta"].get("known_failures") == 1, again
    assert not again["delta"].get("searches") and not again["delta"].get("winners_loaded"), again
    # without the check the same kind of winner serves wrong answers: the check is what caught it
    assert unchecked["err"] > 0.1 and not unchecked["delta"].get("serve_checks"), unchecked
    assert honest["err"] < 1e-5 and honest["delta"].get("serve_checks") == 1, honest
    assert not honest["delta"].get("serve_check_failed"), honest


# -- the check itself, on graphs made here --------------------------------------------------------
import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from torch_cudal1.graph.render import written_placeholders  # noqa: E402
from torch_cudal1.serve.audit import Checked, wanted  # noqa: E402


def _checked(gm, winner, every=0):
    told = []
    fallback = lambda *xs: gm(*xs)   # noqa: E731
    c = Checked(winner, gm, fallback, every=every, precision="highest",
                written=written_placeholders(gm), on_mismatch=told.append)
    return c, told


def test_a_winner_wrong_only_after_its_first_call_is_caught_when_later_calls_are_checked():
    gm = make_fx(lambda x: (torch.tanh(x) * 3,))(torch.randn(8))
    calls = []

    def winner(x):        # right once, then a cheaper wrong answer
        calls.append(1)
        return (torch.tanh(x) * 3 if len(calls) == 1 else torch.zeros_like(x),)
    for every, caught in ((0, False), (1, True)):
        calls.clear()
        c, told = _checked(gm, winner, every)
        xs = [torch.randn(8) for _ in range(3)]
        outs = [c(x)[0] for x in xs]
        assert bool(told) == caught and c.failed == caught
        right = all(torch.allclose(o, torch.tanh(x) * 3) for o, x in zip(outs, xs))
        assert right == caught      # checked: the graph's answer, and the fallback from then on


def test_inputs_the_graph_writes_are_written_once():
    def step(cache, pos, new):
        cache.index_copy_(0, pos, new)
        return (cache.sum(0),)
    cache = torch.zeros(6, 3)
    gm = make_fx(step)(cache.clone(), torch.tensor([1]), torch.ones(1, 3))
    assert written_placeholders(gm) == {0}

    def honest(cache, pos, new):
        return step(cache, pos, new)
    c, told = _checked(gm, honest)
    (out,) = c(cache, torch.tensor([2]), torch.full((1, 3), 2.0))
    assert not told and torch.equal(cache[2], torch.full((3,), 2.0)) and cache.sum() == 6
    assert torch.equal(out, cache.sum(0))

    def forgets_the_write(cache, pos, new):
        return ((cache.index_copy(0, pos, new)).sum(0),)
    cache = torch.zeros(6, 3)
    c, told = _checked(gm, forgets_the_write)
    (out,) = c(cache, torch.tensor([4]), torch.ones(1, 3))
    # the written input differs from the graph's: caught, and the graph's write is made
    assert told and torch.equal(cache[4], torch.ones(3)) and cache.sum() == 3


def test_the_users_own_graph_is_not_checked():
    assert not wanted("baseline:eager", "first") and not wanted("baseline:inductor", "first")
    assert wanted("builtin:rewrite(needless_copies)+inductor", "first")
    assert wanted("openai:r1s0", "first") and not wanted("openai:r1s0", "off")
