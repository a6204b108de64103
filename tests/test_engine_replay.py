"""Replay transcripts: KernelBench rows, whitespace-normalised matching, record then replay."""
import json

from engine_helpers import FAST, NO_CODE, SLOW, TASK_SRC, FakeLLMServer, answer, make_task

from torch_cudal1.cli import main as cli_main
from torch_cudal1.engines import SearchContext, create
from torch_cudal1.engines.replay import RecordingEngine, task_hash
from torch_cudal1.options import Options
from torch_cudal1.task import Task


def _ctx(r=1, samples=2):
    return SearchContext(device="cpu", round=r, samples=samples)


def _kb_rows(path):
    rows = [{"level_id": 1, "task_id": 7, "ref_code": TASK_SRC, "custom_code": FAST},
            {"level_id": 1, "task_id": 8, "ref_code": "other task", "custom_code": SLOW},
            {"level_id": 1, "task_id": 9, "ref_code": "no answer", "custom_code": None}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_task_hash_normalises_whitespace():
    assert task_hash(TASK_SRC) == task_hash(TASK_SRC.replace("\n\n", "\n").replace("    ", "\t") + "\n\n")
    assert task_hash(TASK_SRC) != task_hash(TASK_SRC.replace("2.0", "3.0"))


def test_replay_reads_kernelbench_rows_directly(tmp_path):
    kb = _kb_rows(tmp_path / "kb.jsonl")
    eng = create(Options.resolve({"engine": "replay", "replay_file": str(kb)}, env={}))
    # The same reference, re-indented, still matches; only round 1 has an answer.
    task = Task(TASK_SRC.replace("    ", "  "), name="t")
    cands = eng.propose(task, [], _ctx(1))
    assert len(cands) == 1 and cands[0].source.strip() == FAST.strip()
    assert eng.propose(task, [], _ctx(2)) == []
    assert eng.propose(Task("unknown task"), [], _ctx(1)) == []


def test_transcript_from_kernelbench_cli(tmp_path, capsys):
    kb = _kb_rows(tmp_path / "kb.jsonl")
    out = tmp_path / "t.jsonl"
    assert cli_main(["engine", "transcript-from-kernelbench", str(kb), str(out)]) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 2 and recs[0]["task_hash"] == task_hash(TASK_SRC) and recs[0]["round"] == 1
    eng = create(Options.resolve({"engine": "replay", "replay_file": str(out)}, env={}))
    assert eng.propose(make_task(), [], _ctx())[0].source.strip() == FAST.strip()


def test_real_kernelbench_file_is_served(kernelbench_rows, tmp_path):
    row = next(r for r in kernelbench_rows if r.get("custom_code"))
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(row) + "\n")
    eng = create(Options.resolve({"engine": "replay", "replay_file": str(path)}, env={}))
    cands = eng.propose(Task(row["ref_code"]), [], _ctx())
    assert cands and "class ModelNew" in cands[0].source


def test_record_then_replay(tmp_path):
    rec = tmp_path / "rec.jsonl"
    script = [{"choices": [answer(FAST), NO_CODE]}, {"choices": [answer(SLOW)]}]
    with FakeLLMServer(script) as srv:
        opts = Options.resolve({"engine": "openai", "engine_url": srv.url, "record_file": str(rec),
                                "cache_dir": str(tmp_path)}, env={})
        eng = create(opts)
        assert isinstance(eng, RecordingEngine)
        live1 = eng.propose(make_task(), [], _ctx(1, 2))
        live2 = eng.propose(make_task(), [], _ctx(2, 1))
        eng.close()
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [(x["round"], x["sample"]) for x in lines] == [(1, 0), (1, 1), (2, 0)]
    assert lines[0]["request"][1]["role"] == "user" and "request" not in lines[1]
    assert lines[0]["response"] == answer(FAST) and lines[1]["response"] == NO_CODE
    assert lines[0]["prompt_hash"] == live1[0].meta["prompt_hash"]
    rep = create(Options.resolve({"engine": "replay", "replay_file": str(rec)}, env={}))
    r1 = rep.propose(make_task(), [], _ctx(1, 2))
    r2 = rep.propose(make_task(), [], _ctx(2, 2))
    assert [c.source for c in r1] == [c.source for c in live1]
    assert r1[1].meta.get("failed") and [c.source for c in r2] == [c.source for c in live2]
    assert rep.propose(make_task(), [], _ctx(3, 2)) == []
