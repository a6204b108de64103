"""`cudal1 optimize TASK.py`: search through a scripted local server, cache, report, cache hit;
an engine that dies mid-search leaves a verified fallback and no cache entry."""
import json

from engine_helpers import FAST, TASK_SRC, FakeLLMServer, answer

from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cli import main as cli_main


def _task(tmp_path):
    p = tmp_path / "rowloop.py"
    p.write_text(TASK_SRC)
    return p


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_optimize_then_cache_hit(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    # Environment says a dead server and another model; the flags win.
    monkeypatch.setenv("CUDAL1_ENGINE", "openai")
    monkeypatch.setenv("CUDAL1_ENGINE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CUDAL1_MODEL", "env-model")
    report = tmp_path / "report.md"
    with FakeLLMServer([{"content": answer(FAST, "Vectorise the loop.")}], model="m1") as srv:
        rc = cli_main(["optimize", str(_task(tmp_path)), "--device", "cpu", "--url", srv.url,
                       "--model", "m1", "--rounds", "1", "--samples", "1", "--cache-dir", str(cache),
                       "--baselines", "eager", "--report", str(report), "--json"])
        out, err = capsys.readouterr()
        assert srv.chat_requests()[0]["model"] == "m1"
    assert rc == 0, err
    res = _last_json(out)
    assert res["cache_hit"] is False and res["cached"] is True
    assert res["winner_origin"] == "openai:r1s0" and res["speedup_vs_eager"] > 1.5, (res, err)
    assert res["winner_ms"] < res["eager_ms"] and res["inductor_ms"] is None
    assert res["rounds_run"] == 1 and res["candidates_tried"] == 1 and res["candidates_accepted"] == 1
    assert "winner openai:r1s0" in out and "baseline:eager" in err     # progress on stderr
    text = report.read_text()
    assert "# cudal1 search: rowloop on cpu" in text and "Vectorise the loop." in text
    assert "| 1 | 0 | openai:r1s0 | accepted |" in text
    store = CacheStore(cache)
    entry = store.load(res["key"])
    assert entry is not None and entry.winner_origin == "openai:r1s0"
    att = [a for a in entry.meta["attempts"] if a["candidate"]["origin"] == "openai:r1s0"][0]
    assert att["candidate"]["meta"]["prompt_hash"] and att["candidate"]["meta"]["analysis"]
    assert att["candidate"]["meta"]["raw_response"].startswith("Vectorise the loop.")

    # Second run: the server is gone; the cache answers without any search.
    rc = cli_main(["optimize", str(_task(tmp_path)), "--device", "cpu", "--cache-dir", str(cache),
                   "--baselines", "eager", "--json", "--report", str(report)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    hit = _last_json(out)
    assert hit["cache_hit"] is True and hit["key"] == res["key"]
    assert hit["winner_origin"] == "openai:r1s0" and hit["winner_ms"] == res["winner_ms"]
    assert "cache hit" in out and "cache hit" in err
    assert "Answered from the cache" in report.read_text()


def test_engine_dying_mid_search_caches_nothing(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("CUDAL1_RETRIES", "1")
    # Round 1 answers; from then on every connection is dropped (a crashed server).
    with FakeLLMServer([{"content": answer(FAST)}], default={"drop": True}) as srv:
        rc = cli_main(["optimize", str(_task(tmp_path)), "--device", "cpu", "--engine", "openai",
                       "--url", srv.url, "--rounds", "3", "--samples", "1", "--cache-dir", str(cache),
                       "--baselines", "eager", "--json"])
        out, err = capsys.readouterr()
        assert len(srv.chat_requests()) == 3       # round 1, round 2 + its retry
    assert rc == 1
    res = _last_json(out)
    assert res["complete"] is False and res["cached"] is False and res["cache_hit"] is False
    assert res["winner_origin"] == "openai:r1s0" and res["rounds_run"] == 1
    assert "engine error" in res["stop_reason"] and "nothing cached" in err
    store = CacheStore(cache)
    assert store.keys() == [] and store.load(res["key"]) is None
    assert not store.tmp.exists() or list(store.tmp.iterdir()) == []   # no half-written staging


def test_usage_errors(tmp_path, capsys):
    assert cli_main(["optimize", str(tmp_path / "missing.py"), "--device", "cpu"]) == 2
    bad = tmp_path / "bad.py"
    bad.write_text("this is not python")
    assert cli_main(["optimize", str(bad), "--device", "cpu", "--cache-dir", str(tmp_path)]) == 2
    assert "cannot load task" in capsys.readouterr().err
