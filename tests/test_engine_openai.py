"""The OpenAI-compatible engine against a real local HTTP server with scripted answers."""
import time

import pytest
from engine_helpers import FAST, NO_CODE, SLOW, FakeLLMServer, answer, make_task

from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict
from torch_cudal1.engines import EngineError, SearchContext, create
from torch_cudal1.engines.llm.openai_engine import normalize_url
from torch_cudal1.options import Options


def _engine(url, tmp_path, **kw):
    opts = Options.resolve(dict({"engine": "openai", "engine_url": url, "cache_dir": str(tmp_path),
                                 "retries": 2, "request_timeout_s": 5}, **kw), env={})
    return create(opts)


def _ctx(r=1, samples=1):
    return SearchContext(device="cpu", device_info={"cores": 2}, round=r, samples=samples)


def test_normalize_url():
    for u in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/", "http://h:1/v1/chat/completions"):
        assert normalize_url(u) == "http://h:1/v1"


def test_chat_n_samples_default_model_and_reasoning(tmp_path):
    script = [{"choices": [answer(FAST), NO_CODE], "reasoning": "secret thoughts"}]
    with FakeLLMServer(script, model="served-model") as srv:
        eng = _engine(srv.url, tmp_path, api_key="k123")
        cands = eng.propose(make_task(), [], _ctx(samples=2))
        eng.close()
        req = srv.chat_requests()[0]
    assert len(srv.chat_requests()) == 1 and req["n"] == 2
    assert req["model"] == "served-model"            # the first served model by default
    assert req["messages"][0]["role"] == "system" and "Optimise" in req["messages"][1]["content"]
    assert "torch.relu(x)" in cands[0].source and cands[0].meta["reasoning"] == "secret thoughts"
    assert cands[0].meta["prompt_hash"] and cands[0].meta["raw_response"] == answer(FAST)
    assert cands[1].source == "" and "failed" in cands[1].meta       # no code: a failed sample
    assert [c.origin for c in cands] == ["openai:r1s0", "openai:r1s1"]


def test_server_refusing_n_gets_separate_requests(tmp_path):
    script = [{"content": answer(FAST)}, {"content": answer(SLOW)}, {"content": answer(FAST)}]
    with FakeLLMServer(script, max_n=1) as srv:
        eng = _engine(srv.url, tmp_path, concurrency=2)
        cands = eng.propose(make_task(), [], _ctx(samples=3))
        eng.close()
        reqs = srv.chat_requests()
    # One refused request with n=3, then three with n=1.
    assert [r["n"] for r in reqs] == [3, 1, 1, 1]
    assert len(cands) == 3 and all(c.source for c in cands)


def test_5xx_and_dropped_connections_are_retried(tmp_path):
    script = [{"status": 500}, {"drop": True}, {"status": 429}, {"content": answer(FAST)}]
    with FakeLLMServer(script) as srv:
        eng = _engine(srv.url, tmp_path, retries=3)
        cands = eng.propose(make_task(), [], _ctx())
        eng.close()
        assert len(srv.chat_requests()) == 4
    assert "torch.relu(x)" in cands[0].source


def test_4xx_is_not_retried_and_is_an_engine_error(tmp_path):
    with FakeLLMServer([{"status": 400, "body": {"error": "context too long"}}]) as srv:
        eng = _engine(srv.url, tmp_path)
        with pytest.raises(EngineError, match="context too long"):
            eng.propose(make_task(), [], _ctx())
        assert len(srv.chat_requests()) == 1


def test_persistent_5xx_is_an_engine_error(tmp_path):
    with FakeLLMServer([], default={"status": 503}) as srv:
        eng = _engine(srv.url, tmp_path, retries=1)
        with pytest.raises(EngineError, match="HTTP 503"):
            eng.propose(make_task(), [], _ctx())
        assert len(srv.chat_requests()) == 2


def test_slow_answer_past_timeout(tmp_path):
    # Of two separate samples one answers in time, one does not: a failed sample, not an error.
    script = [{"content": answer(FAST)}, {"delay": 3.0, "content": answer(FAST)}]
    with FakeLLMServer(script, max_n=1) as srv:
        eng = _engine(srv.url, tmp_path, request_timeout_s=1.0, concurrency=1)
        t0 = time.monotonic()
        cands = eng.propose(make_task(), [], _ctx(samples=2))
        assert time.monotonic() - t0 < 2.9        # the timeout was not retried
        assert cands[0].source and cands[1].source == ""
        assert cands[1].meta["failed_reason"] == "timeout"
        # Every sample of a round timing out: the engine failed.
        srv.script[:] = [{"delay": 3.0, "content": answer(FAST)}]
        with pytest.raises(EngineError, match="no answer"):
            eng.propose(make_task(), [], _ctx(r=2))
        eng.close()


def test_unreachable_server_is_one_clear_engine_error(tmp_path):
    srv = FakeLLMServer([])
    url = srv.url
    srv.httpd.server_close()             # bound, then closed: nothing listens there
    eng = _engine(url, tmp_path, retries=1)
    with pytest.raises(EngineError, match="cannot reach the OpenAI-compatible server at " + url):
        eng.propose(make_task(), [], _ctx())


def test_no_url_at_all(tmp_path):
    eng = _engine(None, tmp_path)
    with pytest.raises(EngineError, match="cudal1 engine start"):
        eng.propose(make_task(), [], _ctx())


def test_completion_mode_uses_raw_template(tmp_path):
    tpl = "### Instruction\n{prompt}\n### Response\n"
    with FakeLLMServer([{"content": answer(FAST)}]) as srv:
        eng = _engine(srv.url, tmp_path, completion_mode="completion", prompt_template=tpl,
                      model="kernelllm")
        cands = eng.propose(make_task(), [], _ctx())
        req = srv.requests[-1]
    assert req["_path"] == "/v1/completions" and req["model"] == "kernelllm"
    assert req["prompt"].startswith("### Instruction\n") and req["prompt"].endswith("### Response\n")
    assert "class Model(nn.Module)" in req["prompt"]
    assert "torch.relu(x)" in cands[0].source


def test_second_round_prompt_extends_the_first(tmp_path):
    with FakeLLMServer([{"content": answer(FAST)}, {"content": answer(SLOW)}]) as srv:
        eng = _engine(srv.url, tmp_path)
        task = make_task()
        base = [Attempt(Candidate("x", "baseline:eager"), Verdict.ok(), Timing(4.0, 0.1, 10), 1.0)]
        c1 = eng.propose(task, base, _ctx(1))[0]
        c1.round, c1.sample = 1, 0
        hist = base + [Attempt(c1, Verdict.ok(), Timing(0.5, 0.01, 10), 8.0)]
        eng.propose(task, hist, _ctx(2))
        p1, p2 = (r["messages"][1]["content"] for r in srv.chat_requests())
    shared = p1[: p1.index("## Your answer")]
    assert p2.startswith(shared)
    assert "openai:r1s0 (round 1, sample 0): correct, 0.5000 ms" in p2 and "x8.00 over eager" in p2
    assert FAST.strip() in p2
