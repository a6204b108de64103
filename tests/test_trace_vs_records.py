"""benchmarks/trace_vs_records.py: which records miss candidate families the engine proposes now
(so their figures are stale until the task runs again)."""
import json

from benchmarks import trace_vs_records

LINEAR = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))

def get_inputs():
    return [torch.randn(4, 16)]

def get_init_inputs():
    return []
'''
CONV = LINEAR.replace("nn.Linear(16, 8)", "nn.Conv2d(3, 4, 3)").replace(
    "torch.randn(4, 16)", "torch.randn(2, 3, 8, 8)")


def test_records_without_a_family_the_graph_gets_now_are_listed(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"level_id": 1, "task_id": i, "ref_code": src})
                              for i, src in ((1, LINEAR), (2, CONV))) + "\n")
    recs = [{"id": "L1_1", "status": "ok", "eager_ms": 0.5,   # searched before TF32 existed
             "attempts": [{"origin": "baseline:eager"}, {"origin": "builtin:inductor-max-autotune"}]},
            {"id": "L1_2", "status": "ok", "eager_ms": 2.0,   # before cuDNN autotuning
             "attempts": [{"origin": "baseline:eager"}, {"origin": "builtin:inductor-max-autotune"}]},
            {"id": "L1_2", "status": "ok", "eager_ms": 2.0,   # its latest record has it
             "attempts": [{"origin": "builtin:inductor-max-autotune"},
                          {"origin": "builtin:cudnn-benchmark+inductor"},
                          {"origin": "builtin:channels-last"}]}]
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    out = tmp_path / "found.jsonl"
    assert trace_vs_records.main(["--results", str(results), "--data", str(data),
                                  "--out", str(out)]) == 0
    text = capsys.readouterr().out
    found = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines()}
    assert found["L1_1"]["fp32_products"] and not found["L1_1"]["convolutions"]
    assert found["L1_2"]["convolutions"] and not found["L1_2"]["fp32_products"]
    assert trace_vs_records.stale(list(found.values())) == {
        "rewrite": [], "max-autotune": [], "tf32": ["L1_1"], "cudnn-benchmark": [],
        "channels-last": [], "cudagraph-wrap": []}
    assert "tf32: proposed now, never tried in the record (1): L1_1" in text
    assert "IDS=L1_1\n" in text


LSTM = LINEAR.replace("self.fc = nn.Linear(16, 8)", "self.rnn = nn.LSTM(16, 16, batch_first=True)\n"
                   "        self.fc = nn.Linear(16, 8)").replace(
    "torch.relu(self.fc(x))", "self.fc(self.rnn(x)[0])").replace("torch.randn(4, 16)",
                                                               "torch.randn(2, 3, 16)")


def test_recurrent_models_are_not_called_stale_from_their_cpu_graph(tmp_path):
    """An LSTM's graph on the CPU is not its graph on a GPU (one cuDNN call, which the engine's
    trace does not take), so a device record without TF32 attempts is not stale for it."""
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"level_id": 3, "task_id": i, "ref_code": src})
                              for i, src in ((1, LSTM), (2, LINEAR))) + "\n")
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps({"id": f"L3_{i}", "status": "ok", "eager_ms": 1.0,
                                             "attempts": [{"origin": "baseline:eager"}]})
                                 for i in (1, 2)) + "\n")
    out = tmp_path / "found.jsonl"
    assert trace_vs_records.main(["--results", str(results), "--data", str(data),
                                  "--out", str(out)]) == 0
    found = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"]: r["recurrent"] for r in found} == {"L3_1": True, "L3_2": False}
    assert all(r["fp32_products"] for r in found)   # what the CPU trace alone would say
    assert trace_vs_records.stale(found)["tf32"] == ["L3_2"]


def test_the_runner_summary_counts_stale_records_from_the_records_as_they_are_now(tmp_path):
    """The traces say what each graph gets; the records say what was tried. A task run again
    with the family leaves the count."""
    from benchmarks import kernelbench_runner as kb
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"id": "L1_1", "fired": [], "tunable": True,
                                  "fp32_products": True, "convolutions": False}) + "\n")
    old = {"id": "L1_1", "status": "ok",
           "attempts": [{"origin": "baseline:eager"}, {"origin": "builtin:inductor-max-autotune"}]}
    new = dict(old, attempts=old["attempts"] + [{"origin": "builtin:tf32+inductor"}])
    assert kb.stale_records([old], traces) == 1
    assert kb.stale_records([new], traces) == 0
    assert kb.stale_records([dict(old, id="L9_9")], traces) == 0   # no trace: not counted
    assert kb.stale_records([old], tmp_path / "absent.jsonl") is None
    # --stale runs them again slowest first
    traces.write_text(traces.read_text() + json.dumps(
        {"id": "L1_2", "fired": [], "tunable": True, "fp32_products": True,
         "convolutions": False}) + "\n")
    slow = dict(old, id="L1_2", eager_ms=3.0)
    assert kb.stale_ids([dict(old, eager_ms=1.0), slow, dict(new, id="L1_3")], traces) == \
        ["L1_2", "L1_1"]
    # traced against a record that has been replaced since: the engine as it is searched the task
    # and did not propose the family on the device (an RNN is one cuDNN call there): not stale
    traces.write_text(json.dumps({"id": "L1_1", "fired": [], "tunable": True, "fp32_products": True,
                                  "convolutions": False, "record_seconds": 50.0}) + "\n")
    assert kb.stale_ids([dict(old, seconds=50.0)], traces) == ["L1_1"]
    assert kb.stale_ids([dict(old, seconds=61.5)], traces) == []


def _ok(origin, ms):
    return {"origin": origin, "reason": "ok", "ms": ms, "n": 20}


# A deep network on a loaded host: inductor slowed by its launches, the reference in graph replay
# four times faster than the reference.
LAUNCH_BOUND = [_ok("baseline:eager", 13.4), _ok("baseline:inductor", 26.7),
                _ok("builtin:channels-last", 12.1), _ok("builtin:cudagraph", 3.5)]


def test_records_without_the_graph_wraps_their_own_times_call_for_are_stale(tmp_path):
    """Read off the record's times (the engine's round-2 rule run on them), so recurrent models
    and records searched since the traces count too; a record with the wraps does not."""
    from benchmarks import kernelbench_runner as kb
    rec = {"id": "L3_1", "status": "ok", "seconds": 61.5, "attempts": LAUNCH_BOUND}
    assert trace_vs_records.new_graph_wraps(rec) == ["builtin:channels-last+cudagraph",
                                                     "builtin:inductor+cudagraph"]
    row = dict({"id": "L3_1", "recurrent": True}, **trace_vs_records.tried(rec))
    assert trace_vs_records.stale([row])["cudagraph-wrap"] == ["L3_1"]
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"id": "L3_1", "recurrent": True, "record_seconds": 50.0}) + "\n")
    assert kb.stale_ids([rec], traces) == ["L3_1"]
    done = dict(rec, attempts=LAUNCH_BOUND + [_ok("builtin:channels-last+cudagraph", 3.4),
                                              _ok("builtin:inductor+cudagraph", 2.0)])
    assert trace_vs_records.new_graph_wraps(done) == []
    assert kb.stale_ids([done], traces) == []
    compute_bound = dict(rec, attempts=[_ok("baseline:eager", 8.0), _ok("builtin:cudagraph", 7.9),
                                        _ok("baseline:inductor", 7.0)])
    assert kb.stale_ids([compute_bound], traces) == []
    uncapturable = dict(rec, attempts=[_ok("baseline:eager", 14.8), _ok("baseline:inductor", 8.1),
                                       {"origin": "builtin:cudagraph", "reason": "crash"}])
    assert trace_vs_records.new_graph_wraps(uncapturable) == ["builtin:inductor+cudagraph"]



def test_graph_wraps_are_read_off_the_times_round_two_saw():
    """A timing the search took again after round 2 and kept is not the one round 2 chose by:
    the wrap it chose then is not called missing."""
    first, again = 0.039, 0.087    # inductor: fastest when round 2 ran, slower once retimed
    attempts = [_ok("baseline:eager", 0.0436),
                dict(_ok("baseline:inductor", again),
                     retimed={"kept": "second", "median_ms": first, "spread_ms": 0.01}),
                _ok("builtin:cudagraph", 0.0499), _ok("builtin:cudnn-benchmark", 0.0444),
                _ok("builtin:inductor+cudagraph", 0.0431)]
    rec = {"id": "L2_1", "status": "ok", "seconds": 58.7, "attempts": attempts}
    assert trace_vs_records.new_graph_wraps(rec) == []
    # the first timing kept (0.087 ms then, 0.039 the later one): the record's time is the one
    # round 2 saw, and by it cuDNN autotuning was fastest, which the record never wrapped
    attempts[1] = dict(_ok("baseline:inductor", again),
                       retimed={"kept": "first", "median_ms": first, "spread_ms": 0.01})
    assert trace_vs_records.new_graph_wraps(dict(rec, attempts=attempts)) == \
        ["builtin:cudnn-benchmark+cudagraph"]


def test_a_full_precision_wrap_backing_up_a_tf32_one_is_missed_only_where_that_failed():
    """Round 2 also wraps the fastest full-precision candidate beside a TF32 one, whose replay
    may fail the float32 tolerance on other draws (KernelBench L3_49, L2_55). A record whose TF32
    replay passed does not lack it; one whose TF32 replay failed does."""
    attempts = [_ok("baseline:eager", 0.30), _ok("baseline:inductor", 0.20),
                _ok("builtin:cudagraph", 0.25), _ok("builtin:tf32+inductor", 0.10)]
    passed = {"id": "L3_1", "status": "ok", "seconds": 80.0,
              "attempts": attempts + [_ok("builtin:tf32+inductor+cudagraph", 0.06)]}
    assert trace_vs_records.new_graph_wraps(passed) == []
    failed = dict(passed, attempts=attempts + [{"origin": "builtin:tf32+inductor+cudagraph",
                                                "reason": "mismatch"}])
    assert trace_vs_records.new_graph_wraps(failed) == ["builtin:inductor+cudagraph"]


def test_a_rewrite_added_since_is_stale_beside_rewrites_already_tried():
    """The record tried the rewritten graph, but without a pass that fires on it now."""
    row = {"id": "L1_1", "fired": ["dead_code", "avg_pool_as_conv"]}
    old = {"id": "L1_1", "status": "ok", "attempts": [_ok("builtin:rewrite(dead_code)", 1.0)]}
    assert trace_vs_records.stale([dict(row, **trace_vs_records.tried(old))])["rewrite"] == ["L1_1"]
    new = dict(old, attempts=old["attempts"] + [
        _ok("builtin:rewrite(dead_code,avg_pool_as_conv)+inductor", 0.8)])
    assert trace_vs_records.stale([dict(row, **trace_vs_records.tried(new))])["rewrite"] == []


ATTENTION = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v

def get_inputs():
    return [torch.randn(2, 2, 40, 16), torch.randn(2, 2, 48, 16), torch.randn(2, 2, 48, 16)]

def get_init_inputs():
    return []
'''


def test_passes_that_fire_on_gpu_graphs_only_count_from_the_cpu_trace(tmp_path):
    """The TF32 attention template's pass fires on GPU graphs only; the CPU trace counts it as the
    engine would propose it there, so a record that tried only the fused attention is stale."""
    from torch_cudal1.rewrites import attention_tf32
    rec = {"id": "L3_1", "status": "ok", "eager_ms": 1.0,
           "attempts": [_ok("builtin:rewrite(dead_code,fused_attention)+inductor+tf32", 0.5)]}
    row = trace_vs_records.check({"ref_code": ATTENTION}, rec)
    assert {"fused_attention", "attention_tf32"} <= set(row["fired"]), row
    assert attention_tf32.DEVICES == ("cuda",)   # put back after the trace
    assert trace_vs_records.stale([row])["rewrite"] == ["L3_1"]


def test_a_candidate_the_search_budget_cut_off_was_not_tried():
    row = {"id": "L1_1", "fp32_products": True}
    cut = {"id": "L1_1", "status": "ok", "attempts": [
        _ok("baseline:eager", 1.0),
        {"origin": "builtin:tf32", "reason": "timeout",
         "detail": "no result within 60 s (what was left of the search's time budget)"}]}
    assert trace_vs_records.stale([dict(row, **trace_vs_records.tried(cut))])["tf32"] == ["L1_1"]
    own = dict(cut, attempts=[cut["attempts"][0],
                              dict(cut["attempts"][1], detail="no result within 300 s")])
    assert trace_vs_records.stale([dict(row, **trace_vs_records.tried(own))])["tf32"] == []
