"""CPU smoke test of the KernelBench runner on two tiny level-1 tasks (skipped without data)."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tiny_rows(rows, n=2):
    from benchmarks.kernelbench_runner import count_work
    sized = []
    for r in rows:
        if r["level_id"] == 1:
            try:
                sized.append((count_work(r["ref_code"])["bytes"], r["task_id"], r))
            except Exception:  # noqa: BLE001
                continue
    sized.sort(key=lambda x: (x[0], x[1]))
    return [r for _, _, r in sized[:n]]


def _fake_queue(tmp_path, level: int, ids):
    """(runner module, data file, out dir) for tasks of a placeholder source, ceilings set."""
    from benchmarks import kernelbench_runner as kb
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"level_id": level, "task_id": i, "ref_code": "x = 1\n"}) + "\n"
                            for i in ids))
    out = tmp_path / "out"
    out.mkdir()
    (out / "ceilings.json").write_text(json.dumps({"device": "cpu", "bandwidth_Bps": 1e10,
                                                   "peak_flops": 1e11}))
    return kb, data, out


def test_runner_smoke_on_cpu(kernelbench_rows, tmp_path):
    rows = _tiny_rows(kernelbench_rows)
    data = tmp_path / "tiny.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "kernelbench_runner.py"), "--data", str(data),
           "--device", "cpu", "--fast", "--out", str(out), "--task-timeout", "200"]
    # Two runners at once on one results file and one task queue, as one runner per GPU would.
    procs = [subprocess.Popen(cmd + ["--claim", "t1", "--jobs", "2"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT)) for i in range(2)]
    for p in procs:
        so, se = p.communicate(timeout=900)
        assert p.returncode == 0, so[-3000:] + se[-3000:]
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in recs) == sorted(f"L1_{r['task_id']}" for r in rows)
    assert all(r["status"] == "ok" and r["builtin_correct"] for r in recs)
    assert all(r["eager_ms"] > 0 and r["floor_ms"] > 0 and "replay_ms" in r for r in recs)
    assert all("involuntary_switches" in a["host"] for r in recs for a in r["attempts"] if a["ms"])
    md = (out / "summary.md").read_text()
    assert "overall" in md and "cudal1_builtin" in md and "Over all 250 KernelBench tasks" in md
    sols = (out / "solutions.md").read_text()
    assert all(r["id"] in sols for r in recs if r.get("replay_candidate"))
    # resumable: a second run skips both tasks
    p2 = subprocess.run(cmd + ["--no-replay"], capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert p2.returncode == 0 and "(2 done)" in p2.stdout
    assert len((out / "results.jsonl").read_text().splitlines()) == 2


def test_interleave_covers_every_level_early():
    from benchmarks.kernelbench_runner import interleave_levels
    rows = [{"id": f"L{lv}_{i}", "level": lv} for lv, n in ((1, 3), (2, 2), (3, 1)) for i in range(n)]
    order = [r["id"] for r in interleave_levels(rows)]
    assert order == ["L1_0", "L2_0", "L3_0", "L1_1", "L2_1", "L1_2"]


def test_a_task_out_of_device_memory_beside_others_is_retried_alone(tmp_path, monkeypatch):
    """Several tasks share a GPU's memory; one that ran out beside them is not recorded as a
    failure of its reference, but run again once the others are done."""
    import threading
    import time
    kb, data, out = _fake_queue(tmp_path, 1, (1, 2, 3))
    active, seen, mu = [0], [], threading.Lock()

    def fake_run_task(row, args, ceilings, budget_s=None):
        with mu:
            active[0] += 1
            seen.append((row["id"], active[0]))
        time.sleep(0.2)
        with mu:
            active[0] -= 1
        first = sum(1 for i, _ in seen if i == row["id"]) == 1
        if row["id"] == "L1_2" and first:
            return {"id": row["id"], "level": 1, "status": "reference_failed",
                    "error": "no baseline passed verification: baseline:eager: memory "
                             "OutOfMemoryError: CUDA out of memory."}
        rec = {"id": row["id"], "level": 1, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0,
               "builtin_ms": 1.0, "builtin_correct": True, "seconds": 0.2}
        if row["id"] == "L1_3" and first:   # a candidate rejected for the device's memory
            rec["replay_candidate"] = {"origin": "replay:r1s0", "accepted": False, "reason": "memory",
                                       "detail": "OutOfMemoryError: CUDA out of memory. Tried to"}
        return rec
    monkeypatch.setattr(kb, "run_task", fake_run_task)
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--jobs", "3", "--no-replay"])
    recs = {json.loads(x)["id"]: json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()}
    assert recs["L1_2"]["status"] == "ok" and len(recs) == 3
    for tid in ("L1_2", "L1_3"):
        retry = [n for i, n in seen if i == tid]
        assert len(retry) == 2 and retry[1] == 1, seen   # the second run had the device alone
    assert "replay_candidate" not in recs["L1_3"]


def test_retry_failed_runs_again_only_the_tasks_whose_latest_record_is_a_failure(tmp_path, monkeypatch):
    kb, data, out = _fake_queue(tmp_path, 3, (1, 2, 3))
    ok = {"level": 3, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True, "seconds": 0.1}
    (out / "results.jsonl").write_text(
        json.dumps({"id": "L3_1", "level": 3, "status": "reference_failed", "error": "x"}) + "\n"
        + json.dumps(dict(ok, id="L3_2")) + "\n"
        + json.dumps(dict(ok, id="L3_3", replay_candidate={"origin": "replay:r1s0", "accepted": False,
                                                            "reason": "memory",
                                                            "detail": "CUDA out of memory"})) + "\n")
    ran = []
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append(row["id"]) or dict(ok, id=row["id"]))
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay"])
    assert ran == []                                   # without the flag a failure counts as done
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay", "--retry-failed"])
    assert ran == ["L3_1", "L3_3"]   # and the one whose candidate lost to device memory
    assert kb.read_results(out / "results.jsonl")["L3_1"]["status"] == "ok"


def test_again_reruns_the_selected_tasks_whatever_their_records(tmp_path, monkeypatch):
    """After a change to the engine its effect on measured tasks is measured by running them
    again; the new record supersedes the old."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2))
    ok = {"level": 2, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True, "seconds": 0.1}
    (out / "results.jsonl").write_text("".join(json.dumps(dict(ok, id=f"L2_{i}")) + "\n"
                                               for i in (1, 2)))
    ran = []
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append(row["id"])
                        or dict(ok, id=row["id"], builtin_ms=0.5))
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay", "--ids", "L2_2"])
    assert ran == []
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay", "--ids", "L2_2",
             "--again"])
    assert ran == ["L2_2"] and kb.read_results(out / "results.jsonl")["L2_2"]["builtin_ms"] == 0.5


def test_a_task_that_would_not_end_before_the_deadline_is_left_and_the_next_one_run(
        tmp_path, monkeypatch):
    """Two tasks whose last records took 346 and 237 s, started first with 450 s left, would both
    be cut off and their work lost. With the caller's deadline given, the runner starts only what
    its last time says can end before it, and goes on with the rest."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2, 3))
    ok = {"level": 2, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True}
    (out / "results.jsonl").write_text("".join(
        json.dumps(dict(ok, id=f"L2_{i}", seconds=sec)) + "\n"
        for i, sec in ((1, 346.0), (2, 20.0), (3, 137.0))))
    ran, lines, budgets = [], [], []
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append(row["id"])
                        or budgets.append(b) or dict(ok, id=row["id"], seconds=0.1))
    monkeypatch.setattr("builtins.print", lambda *a, **k: lines.append(" ".join(map(str, a))))
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay",
             "--again", "--ids", "L2_1,L2_2,L2_3", "--deadline-seconds", "450"])
    assert ran == ["L2_2", "L2_3"]   # 2 x 137 fits in 450 s; 2 x 346 does not
    assert any(x.startswith("L2_1: not started (its last record took 346.0 s") for x in lines)
    assert kb.fits(None, 10.0, 450) and not kb.fits(None, 451.0, 450) and kb.fits({"seconds": 1e6}, 0, 0)
    # a run with fewer jobs than the record's may expect less of the device lock's waits
    assert not kb.fits({"seconds": 300.0}, 0.0, 450) and kb.fits({"seconds": 300.0}, 0.0, 450, 1.3)
    # A task can run up to 3 times its last record (a loaded host, a slower candidate): each
    # search stops proposing in time to be recorded before the deadline.
    assert all(b <= 450 - kb.MIN_RESERVE_S for b in budgets)
    assert kb.search_budget(400, 300, 450) == 450 - 300 - kb.DEADLINE_RESERVE_S   # no record
    assert kb.search_budget(400, 0, 0) == 400 and kb.search_budget(400, 0, 1000) == 400
    # a task quick last time keeps less after its budget: its candidates are quick too
    quick, slow = {"seconds": 40.0}, {"seconds": 400.0}
    assert kb.search_budget(400, 300, 450, quick) == 450 - 300 - kb.MIN_RESERVE_S
    assert kb.search_budget(400, 0, 450, slow) == 450 - kb.DEADLINE_RESERVE_S
    # and a task with too little left for a search is not started, whatever its last record
    assert not kb.fits({"seconds": 1.0}, 450 - kb.MIN_RESERVE_S - kb.MIN_SEARCH_S + 1, 450)


def test_a_run_cut_off_by_its_callers_timeout_keeps_how_long_its_tasks_had_run(tmp_path):
    """A task in flight when the caller's `timeout` cuts the run off (SIGTERM) would leave no
    trace, and the deadline rule, reading its older and shorter record, would start it again at
    the next run's end. The runner notes how long each task in flight had run; the next run's
    rule uses it, until a newer record supersedes it. The results file itself is untouched."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2))
    ok = {"level": 2, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True}
    (out / "results.jsonl").write_text(json.dumps(dict(ok, id="L2_1", seconds=10.0)) + "\n")
    started = tmp_path / "started"
    script = (f"import sys, time; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
              "import kernelbench_runner as kb\n"
              "def slow(row, a, c, b=None):\n"
              f"    open({str(started)!r}, 'a').write(row['id'] + '\\n'); time.sleep(600)\n"
              "kb.run_task = slow\n"
              f"kb.main(['--data', {str(data)!r}, '--device', 'cpu', '--out', {str(out)!r}, "
              "'--no-replay', '--again', '--ids', 'L2_1,L2_2', '--jobs', '2'])\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (started.exists() and len(started.read_text().split()) == 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    cut = [json.loads(x) for x in (out / kb.CUT_OFF).read_text().splitlines()]
    assert sorted(c["id"] for c in cut) == ["L2_1", "L2_2"] and all(c["cut_off_after_s"] >= 1.0
                                                                    for c in cut)
    assert len((out / "results.jsonl").read_text().splitlines()) == 1   # no record written
    last = kb.last_times(out / "results.jsonl")
    assert last["L2_1"]["seconds"] >= 10.0 and last["L2_1"]["status"] == "ok"
    assert last["L2_2"]["seconds"] >= 1.0
    # a cut-off longer than the last record counts; a newer record supersedes it
    (out / kb.CUT_OFF).write_text(json.dumps({"id": "L2_1", "cut_off_after_s": 446.0,
                                              "records_then": 1}) + "\n")
    assert kb.last_times(out / "results.jsonl")["L2_1"]["seconds"] == 446.0
    assert not kb.fits(kb.last_times(out / "results.jsonl")["L2_1"], 0.0, 450)
    with (out / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(dict(ok, id="L2_1", seconds=30.0)) + "\n")
    assert kb.last_times(out / "results.jsonl")["L2_1"]["seconds"] == 30.0


def test_shortest_first_runs_the_quickest_records_first(tmp_path, monkeypatch):
    """A short run gets the most records from the tasks quickest last time; a task with no
    record (its time unknown) comes last."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2, 3, 4))
    ok = {"level": 2, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True}
    (out / "results.jsonl").write_text("".join(
        json.dumps(dict(ok, id=f"L2_{i}", seconds=sec)) + "\n"
        for i, sec in ((1, 30.0), (3, 5.0), (4, 10.0))))
    ran = []
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append(row["id"])
                        or dict(ok, id=row["id"], seconds=0.1))
    before = signal.getsignal(signal.SIGTERM)
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay",
             "--again", "--ids", "L2_1,L2_2,L2_3,L2_4", "--shortest-first"])
    assert ran == ["L2_3", "L2_4", "L2_1", "L2_2"]
    assert signal.getsignal(signal.SIGTERM) is before   # its cut-off handler is the run's alone


def test_a_kernelbench_folder_adds_its_tasks_to_the_data_files(tmp_path, monkeypatch):
    """KernelBench's own layout (levelK/N_Name.py, nested) gives ids that join the data file's
    records, so tasks the data file lacks are measured beside it; a task in both is the data
    file's (it carries CUDA-L1's solution); a folder alone runs alone."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2))
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    rows[0]["custom_code"] = "class ModelNew: pass\n"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    folder = tmp_path / "KernelBench"
    for rel in ("level2/1_Dup.py", "level2/10_Extra.py", "level1/3_Other.py", "sub/level3/5_Net.py"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(f"# {rel}\n")
    ran = []
    ok = {"status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True, "seconds": 0.1}
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append((row["id"], row["ref_code"],
                        row["custom_code"])) or dict(ok, id=row["id"], level=row["level"]))
    kb.main(["--data", str(data), "--tasks", str(folder), "--device", "cpu", "--out", str(out),
             "--no-replay"])
    assert [r[0] for r in ran] == ["L1_3", "L2_1", "L2_2", "L2_10", "L3_5"]
    assert ran[1][1:] == ("x = 1\n", "class ModelNew: pass\n")   # the data file's L2_1
    assert ran[3][1] == "# level2/10_Extra.py\n" and ran[3][2] is None
    ran.clear()
    out2 = tmp_path / "out2"
    out2.mkdir()
    (out2 / "ceilings.json").write_text((out / "ceilings.json").read_text())
    kb.main(["--tasks", str(folder), "--device", "cpu", "--out", str(out2), "--no-replay"])
    assert [r[0] for r in ran] == ["L1_3", "L2_1", "L2_10", "L3_5"]


@pytest.mark.parametrize("crowded", ["memory", "timeout"])
def test_a_solution_out_of_memory_beside_the_search_is_verified_again_alone(tmp_path, monkeypatch,
                                                                          crowded):
    """The CUDA-L1 solution is verified beside the search's children; a ``memory`` or ``timeout``
    verdict there is not its verdict: it is verified again once the search is done."""
    import types

    import torch_cudal1.search as search_mod
    import torch_cudal1.verify as verify_mod
    from torch_cudal1.contracts import Timing, Verdict
    kb, _, _ = _fake_queue(tmp_path, 1, (1,))
    timing = Timing(median_ms=0.5, spread_ms=0.01, n=50, method="cpu_perf_counter", extra={})
    base = types.SimpleNamespace(candidate=types.SimpleNamespace(origin="baseline:eager"),
                                 verdict=Verdict.ok(), timing=timing, seconds=1.0, at_s=1.0)
    searching = []

    def fake_search(task, opts, device, key="", progress=None):
        searching.append(True)
        return types.SimpleNamespace(winner=base, attempts=[base], eager_ms=0.5, inductor_ms=0.6,
                                     stop_reason="rounds exhausted", cleanup=lambda: searching.pop())
    verdicts = []

    def fake_evaluate(task, cand, **kw):
        verdicts.append(bool(searching))   # the search still running beside it
        if len(verdicts) == 1:
            return Verdict.reject(crowded, "beside the search's children"), None
        return Verdict.ok(), Timing(median_ms=0.1, spread_ms=0.001, n=50,
                                        method="cpu_perf_counter", extra={})
    monkeypatch.setattr(search_mod, "run_search", fake_search)
    monkeypatch.setattr(verify_mod, "evaluate", fake_evaluate)
    row = {"id": "L1_1", "level": 1, "ref_code": "x = 1\n", "custom_code": "y = 2\n"}
    args = types.SimpleNamespace(device="cpu", out=str(tmp_path / "o"), data=None, rounds=1,
                                 fast=True, task_timeout=60.0, builds_per_task=1, no_replay=False,
                                 max_autotune=False)
    rec = kb.run_task(row, args, {})
    assert len(verdicts) == 2
    assert rec["replay_candidate"]["accepted"] and rec["replay_candidate"]["reason"] == "ok"
    assert rec["replay_ms"] == 0.1


@pytest.mark.parametrize("first_switches,evaluations,kept_ms", [(211, 2, 1.5), (3, 1, 7.23)])
def test_a_solution_timed_while_the_host_disturbed_it_is_timed_again(
        tmp_path, monkeypatch, first_switches, evaluations, kept_ms):
    """A solution measured at 1.52 ms can time 7.23 ms +-5.83 while its timing thread is
    preempted 211 times, and the replay figure would take that. A solution's disturbed or wide
    timing is taken once more after the search, and the better kept, as the search does for its
    own best; a calm one is kept as it is."""
    import types

    import torch_cudal1.search as search_mod
    import torch_cudal1.verify as verify_mod
    from torch_cudal1.contracts import Timing, Verdict
    kb, _, _ = _fake_queue(tmp_path, 1, (1,))
    slow = Timing(median_ms=20.0, spread_ms=0.1, n=20, method="cuda_events", extra={})
    base = types.SimpleNamespace(candidate=types.SimpleNamespace(origin="baseline:eager"),
                                 verdict=Verdict.ok(), timing=slow, seconds=1.0, at_s=1.0)
    monkeypatch.setattr(search_mod, "run_search", lambda task, opts, device, key="", progress=None:
                        types.SimpleNamespace(winner=base, attempts=[base], eager_ms=20.0,
                                              inductor_ms=20.0, stop_reason="rounds exhausted",
                                              cleanup=lambda: None))
    timings = [Timing(median_ms=7.23, spread_ms=5.83 if first_switches > 50 else 0.05, n=171,
                      method="cuda_events", extra={"involuntary_switches": first_switches}),
               Timing(median_ms=1.5, spread_ms=0.02, n=200, method="cuda_events",
                      extra={"involuntary_switches": 1})]
    calls = []
    monkeypatch.setattr(verify_mod, "evaluate", lambda task, cand, **kw: (
        calls.append(cand.origin) or Verdict.ok(), timings[len(calls) - 1]))
    row = {"id": "L3_1", "level": 3, "ref_code": "x = 1\n", "custom_code": "y = 2\n"}
    args = types.SimpleNamespace(device="cuda", out=str(tmp_path / "o"), data=None, rounds=1,
                                 fast=True, task_timeout=60.0, builds_per_task=1, no_replay=False,
                                 max_autotune=False)
    rec = kb.run_task(row, args, {})
    assert len(calls) == evaluations and rec["replay_ms"] == kept_ms
    assert rec["replay_winner"] == "replay:custom_code"
    if evaluations == 2:   # the first timing is kept beside the second
        assert rec["replay_candidate"]["retimed"]["kept"] == "second"
        assert rec["replay_candidate"]["retimed"]["median_ms"] == 7.23


def test_the_summary_lists_timings_with_a_wide_spread(tmp_path):
    """A ratio built on a timing whose spread is half its median is flagged in the markdown
    summary; the timings of candidates that did not win are not."""
    from benchmarks import kernelbench_runner as kb

    def att(origin, ms, spread):
        return {"origin": origin, "reason": "ok", "ms": ms, "spread_ms": spread}
    rec = {"id": "L2_1", "level": 2, "status": "ok", "eager_ms": 81.8, "inductor_ms": 7.7,
           "builtin_ms": 7.4, "builtin_winner": "builtin:inductor-max-autotune", "replay_ms": 7.4,
           "attempts": [att("baseline:eager", 81.8, 41.8), att("baseline:inductor", 7.7, 0.07),
                        att("builtin:cudagraph", 39.0, 20.0),
                        att("builtin:inductor-max-autotune", 7.4, 0.15)]}
    calm = dict(rec, id="L2_2", attempts=[att("baseline:eager", 37.1, 0.2)])
    assert kb.wide_spreads([rec, calm]) == [("L2_1", "baseline:eager", 81.8, 41.8)]
    path = tmp_path / "summary.md"
    kb.write_markdown([rec, calm], {}, {}, path)
    text = path.read_text()
    assert "| L2_1 | baseline:eager | 81.8000 | 41.8000 |" in text
    assert "builtin:cudagraph | 39.0000" not in text


def _kb():
    from benchmarks import kernelbench_runner as kb
    return kb


def _att(origin, ms, reason="ok"):
    return {"origin": origin, "reason": reason, "ms": ms, "spread_ms": 0.0}


def _summary_text(kb, records, at, path) -> str:
    summary = kb.summarize(records)
    summary["overall"]["all_tasks"] = at
    kb.write_markdown(records, summary, {}, path)
    return path.read_text()


def test_the_summary_gives_the_figure_without_tf32_winners_too(tmp_path):
    """Where a TF32 candidate won, the figure is also given with that task at the fastest
    accepted attempt without TF32 (a rejected attempt never counts)."""
    kb, att = _kb(), _att
    tf = {"id": "L1_1", "level": 1, "status": "ok", "eager_ms": 4.0, "inductor_ms": 4.0,
          "builtin_ms": 1.0, "builtin_winner": "builtin:tf32+inductor+cudagraph", "replay_ms": 1.0,
          "attempts": [att("baseline:eager", 4.0), att("baseline:inductor", 4.0),
                       att("builtin:inductor-max-autotune", 2.0),
                       att("builtin:rewrite(x)", 0.5, reason="mismatch"),
                       att("builtin:tf32+inductor", 1.2), att("builtin:tf32+inductor+cudagraph", 1.0)]}
    plain = {"id": "L1_2", "level": 1, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0,
             "builtin_ms": 1.0, "builtin_winner": "baseline:eager", "replay_ms": 1.0}
    assert kb.full_float32_ms(tf) == 2.0
    assert kb.full_float32_ms(plain) == 1.0
    at = kb.all_tasks_geomean([tf, plain], total=4)
    assert at["tf32_winners"] == 1
    assert abs(at["cudal1_builtin"] - 4.0 ** 0.25) < 1e-9
    assert abs(at["cudal1_builtin_full_fp32"] - 2.0 ** 0.25) < 1e-9
    assert "TF32 tensor cores (within the float32 tolerance): 1" in \
        _summary_text(kb, [tf, plain], at, tmp_path / "summary.md")


def test_the_summary_gives_the_figure_without_cudnn_autotuning_winners_too(tmp_path):
    """Likewise for the cuDNN-autotuning candidates: their winners are counted, and the figure is
    also given with each at the fastest accepted attempt of its search without them."""
    kb, att = _kb(), _att
    conv = {"id": "L1_55", "level": 1, "status": "ok", "eager_ms": 3.0, "inductor_ms": 4.0,
            "builtin_ms": 1.5, "builtin_winner": "builtin:cudnn-benchmark", "replay_ms": 1.5,
            "attempts": [att("baseline:eager", 3.0), att("baseline:inductor", 4.0),
                         att("builtin:cudnn-benchmark+inductor", 1.0, reason="mismatch"),
                         att("builtin:cudnn-benchmark", 1.5)]}
    tf = dict(conv, id="L1_1", builtin_winner="builtin:tf32", builtin_ms=1.5,
              attempts=[att("baseline:eager", 3.0), att("builtin:tf32", 1.5)])
    assert kb.builtin_ms_without(conv, "cudnn-benchmark") == 3.0
    assert kb.builtin_ms_without(tf, "cudnn-benchmark") == 1.5
    at = kb.all_tasks_geomean([conv, tf], total=2)
    assert (at["cudnn_benchmark_winners"], at["tf32_winners"]) == (1, 1)
    assert abs(at["cudal1_builtin"] - 2.0) < 1e-9
    assert abs(at["cudal1_builtin_without_cudnn_benchmark"] - 2.0 ** 0.5) < 1e-9
    assert "autotuning of convolution algorithms for their own calls: 1. Without them" \
        in _summary_text(kb, [conv, tf], at, tmp_path / "summary.md")


def test_the_summary_gives_the_figure_without_channels_last_winners_too(tmp_path):
    kb, att = _kb(), _att
    cl = {"id": "L2_1", "level": 2, "status": "ok", "eager_ms": 4.0, "inductor_ms": 2.0,
          "builtin_ms": 1.0, "builtin_winner": "builtin:channels-last", "replay_ms": 1.0,
          "attempts": [att("baseline:eager", 4.0), att("baseline:inductor", 2.0),
                       att("builtin:channels-last", 1.0)]}
    at = kb.all_tasks_geomean([cl], total=1)
    assert at["channels_last_winners"] == 1
    assert abs(at["cudal1_builtin_without_channels_last"] - 2.0) < 1e-9   # inductor's 2.0 ms
    assert "Built-in winners with the channels-last layout: 1. Without them" \
        in _summary_text(kb, [cl], at, tmp_path / "summary.md")


def test_the_host_probe_measures_a_tiny_op_per_call():
    us = _kb().measure_host_launch_us("cpu", calls=200)
    assert 0 < us < 10_000


def test_the_summary_counts_the_tasks_timed_on_the_python_loop(tmp_path):
    """Records say which clock timed them; the summary says how many tasks rest on the Python
    loop, whose host time inflates launch-bound samples."""
    kb = _kb()
    a = dict(_att("baseline:eager", 1.0), host={"clock": "native"})
    native = {"id": "L1_1", "level": 1, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0,
              "builtin_ms": 0.5, "builtin_winner": "baseline:eager", "replay_ms": 0.5,
              "attempts": [a]}
    python = dict(native, id="L1_2", attempts=[a, dict(a, host={"clock": "python"})])
    at = kb.all_tasks_geomean([native, python], total=2)
    assert at["python_clock"] == 1
    assert "Timed on the Python loop, not the native clock: 1 of the 2 tasks" in \
        _summary_text(kb, [native, python], at, tmp_path / "summary.md")
    assert kb.all_tasks_geomean([native], total=1)["python_clock"] == 0


def test_a_failed_attempt_keeps_why_in_the_record():
    """Read later without a GPU: a rejection's detail is kept (truncated), an accepted attempt's
    time without one."""
    from benchmarks import kernelbench_runner as kb
    from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict
    crashed = Attempt(Candidate("x", "builtin:cudagraph"),
                      Verdict.reject("crash", "RuntimeError: operation not permitted when stream "
                                              "is capturing" + "!" * 400), seconds=6.3)
    rec = kb.attempt_record(crashed)
    assert rec["reason"] == "crash" and rec["ms"] is None
    assert rec["detail"].startswith("RuntimeError: operation not permitted") and len(rec["detail"]) == 300
    ok = kb.attempt_record(Attempt(Candidate("x", "baseline:eager"), Verdict.ok(),
                                   Timing(1.5, 0.1, 20), seconds=2.0))
    assert ok["ms"] == 1.5 and ok["n"] == 20 and "detail" not in ok


def test_records_and_the_summary_keep_the_paired_eager_figure(tmp_path):
    """Eager timed in the winner's own child: the record keeps the ratio and the summary sets it
    beside the figure from separate children, on the same tasks."""
    kb = _kb()
    from torch_cudal1.contracts import Attempt, Candidate, Timing, Verdict
    rec = kb.attempt_record(Attempt(Candidate("x", "baseline:inductor"), Verdict.ok(),
                                    Timing(1.0, 0.1, 20, extra={"paired_ref_ms": 3.0})))
    assert rec["paired_ref_ms"] == 3.0
    drifted = {"id": "L3_1", "level": 3, "status": "ok", "eager_ms": 8.0, "inductor_ms": 2.0,
               "builtin_ms": 2.0, "builtin_winner": "baseline:inductor", "replay_ms": 2.0,
               "builtin_paired_speedup": 2.0, "attempts": [_att("baseline:eager", 8.0)]}
    unpaired = dict(drifted, id="L3_2", builtin_paired_speedup=None)
    at = kb.all_tasks_geomean([drifted, unpaired], total=2)
    assert at["paired_tasks"] == 1
    assert abs(at["paired_geomean"] - 2.0) < 1e-9 and abs(at["unpaired_geomean_same_tasks"] - 4.0) < 1e-9
    assert "right after it (`pair_reference`): 1 tasks, geomean over eager 2.000; the same tasks " \
           "with eager from its own child: 4.000" in _summary_text(kb, [drifted, unpaired], at,
                                                                   tmp_path / "summary.md")
    assert "paired_tasks" not in kb.all_tasks_geomean([unpaired], total=1)


def test_the_summary_says_how_far_eager_drifted_between_one_searchs_children(tmp_path):
    """Eager can time 16.5 ms in its own child and 8.5-17.1 ms beside the candidates in theirs.
    The spread of those timings, not one of them, tells how far a ratio across children can be
    trusted."""
    kb = _kb()
    eager = dict(_att("baseline:eager", 16.5), paired_ref_ms=16.4)
    rec = {"id": "L3_10", "level": 3, "status": "ok", "eager_ms": 16.5, "inductor_ms": 6.9,
           "builtin_ms": 2.0, "builtin_winner": "builtin:x", "replay_ms": 2.0,
           "builtin_paired_speedup": 6.0,
           "attempts": [eager, dict(_att("builtin:x", 2.0), paired_ref_ms=12.0),
                        dict(_att("builtin:y", 9.0), paired_ref_ms=8.25)]}
    assert kb.eager_drift(rec) == 2.0
    assert kb.eager_drift(dict(rec, attempts=[_att("baseline:eager", 16.5)])) is None
    at = kb.all_tasks_geomean([rec], total=1)
    assert "varied by a median factor of 2.00 (slowest over fastest), up to 2.00 (L3_10)" in \
        _summary_text(kb, [rec], at, tmp_path / "summary.md")


def test_the_summary_names_the_tasks_whose_eager_the_host_disturbed(tmp_path):
    """Eager timings preempted 50 times or more on the timing core run up to 2.06x the task's
    other eager timings, and records made before such timings were taken again still divide by
    one. The summary names them and gives the figure with each counted 1.0."""
    kb = _kb()
    calm = dict(_att("baseline:eager", 4.0), host={"involuntary_switches": 3})
    rec = {"id": "L3_1", "level": 3, "status": "ok", "eager_ms": 4.0, "inductor_ms": 2.0,
           "builtin_ms": 1.0, "builtin_winner": "builtin:x", "replay_ms": 1.0, "attempts": [calm]}
    hit = dict(rec, id="L3_2", attempts=[dict(calm, host={"involuntary_switches": 426})])
    at = kb.all_tasks_geomean([rec, hit], total=2)
    assert at["disturbed_eager"] == ["L3_2"]
    assert abs(at["cudal1_builtin_without_disturbed_eager"] - 2.0) < 1e-9   # (4 * 1) ** (1 / 2)
    assert abs(at["cudal1_builtin"] - 4.0) < 1e-9
    assert "50 times or more: 1 tasks (L3_2;" in _summary_text(kb, [rec, hit], at,
                                                               tmp_path / "summary.md")
    # a disturbed candidate is not eager: nothing to say
    other = dict(rec, attempts=[calm, dict(_att("builtin:x", 1.0), host={"involuntary_switches": 99})])
    assert "disturbed_eager" not in kb.all_tasks_geomean([other], total=1)


def test_stale_also_runs_again_the_records_timed_unsoundly(tmp_path, monkeypatch):
    """`--stale` is what a GPU run uses to bring records up to date: a record dividing by a
    disturbed eager timing is one, whatever families it tried, and so is one timed on the Python
    loop (its host time inside launch-bound samples)."""
    kb, data, out = _fake_queue(tmp_path, 2, (1, 2, 3, 4))
    ok = {"level": 2, "status": "ok", "eager_ms": 1.0, "inductor_ms": 1.0, "builtin_ms": 1.0,
          "builtin_correct": True, "seconds": 1.0}
    eager = {"origin": "baseline:eager", "ms": 1.0, "host": {"involuntary_switches": 2}}
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        dict(ok, id="L2_1", attempts=[eager]),
        dict(ok, id="L2_2", attempts=[dict(eager, host={"involuntary_switches": 300})]),
        dict(ok, id="L2_3", attempts=[eager]),
        dict(ok, id="L2_4", attempts=[dict(eager, host={"clock": "python"})]))))
    monkeypatch.setattr(kb, "stale_ids", lambda recs, traces=None: ["L2_3"])
    ran = []
    monkeypatch.setattr(kb, "run_task", lambda row, a, c, b=None: ran.append(row["id"])
                        or dict(ok, id=row["id"]))
    kb.main(["--data", str(data), "--device", "cpu", "--out", str(out), "--no-replay", "--stale"])
    assert ran == ["L2_3", "L2_2", "L2_4"]


def test_replay_recheck_verifies_old_replay_winners_again_under_the_rules_now(tmp_path):
    """A record whose replay figure rests on a CUDA-L1 solution accepted by an older verifier is
    verified again (benchmarks/replay_recheck.py, the real verifier on the CPU): a solution that
    returns another layout than the reference's (rejected since rules revision 2) leaves the
    replay figure to the built-in winner; an honest one keeps it; a record checked under the
    current rules is not selected, unless the host disturbed its solution's timing where the
    solution could have won. The search's fields are kept as they were."""
    kb = _kb()
    from benchmarks import replay_recheck
    from torch_cudal1.verify import RULES
    adv = ROOT / "tests" / "adversarial"
    ref = (adv / "tasks" / "conv2d.py").read_text()
    data = tmp_path / "rows.jsonl"
    # each task its own input shape: the replay engine serves solutions by their task's graph
    data.write_text("".join(json.dumps({"level_id": 1, "task_id": i,
                                        "ref_code": ref.replace("16, 20", f"16, {16 + 4 * i}"),
                                        "custom_code": (adv / name).read_text()}) + "\n"
                            for i, name in ((1, "layout_channels_last.py"),
                                            (2, "honest_channels_last.py"),
                                            (3, "honest_channels_last.py"),
                                            (4, "honest_channels_last.py"),
                                            (5, "honest_channels_last.py"))))
    out = tmp_path / "out"
    out.mkdir()
    eager = {"origin": "baseline:eager", "reason": "ok", "ms": 10.0, "spread_ms": 0.01, "n": 50}
    rec = {"level": 1, "status": "ok", "eager_ms": 10.0, "inductor_ms": 12.0, "builtin_ms": 10.0,
           "builtin_winner": "baseline:eager", "attempts": [eager], "seconds": 42.0,
           "replay_ms": 0.001, "replay_winner": "replay:r1s0",
           "replay_candidate": {"origin": "replay:r1s0", "accepted": True, "reason": "ok"}}
    now = dict(rec, id="L1_3", replay_candidate=dict(rec["replay_candidate"], rules=RULES))
    # timed once while the host preempted the timing thread: 20 ms +-15 could have beaten 10 ms
    shaken = dict(rec["replay_candidate"], rules=RULES, ms=20.0, spread_ms=15.0,
                  host={"involuntary_switches": 211})
    disturbed = dict(rec, id="L1_4", replay_ms=10.0, replay_winner="baseline:eager",
                     replay_candidate=shaken)
    hopeless = dict(disturbed, id="L1_5", replay_candidate=dict(shaken, ms=40.0))
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        dict(rec, id="L1_1"), dict(rec, id="L1_2"), now, disturbed, hopeless)))
    kb.write_markdown(list(kb.read_results(out / "results.jsonl").values()), {}, {},
                      out / "summary.md")
    summary = (out / "summary.md").read_text()
    assert "Replay winners accepted under older verifier rules: 2 (L1_1 L1_2)" in summary
    assert "could have won within it: 1 (L1_4)" in summary

    assert replay_recheck.main(["--data", str(data), "--out", str(out), "--device", "cpu",
                                "--jobs", "1", "--total-tasks", "0"]) == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    # L1_3 was checked under the current rules, and L1_5 could not have won: not again
    assert len(lines) == 8 and {json.loads(x)["id"] for x in lines[5:]} == {"L1_1", "L1_2", "L1_4"}
    latest = kb.read_results(out / "results.jsonl")
    bad, good = latest["L1_1"], latest["L1_2"]
    assert bad["replay_candidate"]["reason"] == "stride" and not bad["replay_candidate"]["accepted"]
    assert (bad["replay_ms"], bad["replay_winner"]) == (10.0, "baseline:eager")
    assert good["replay_candidate"]["accepted"], good["replay_candidate"]
    assert good["replay_winner"].startswith("replay:") and good["replay_ms"] < 10.0
    for r in (bad, good):
        assert r["replay_candidate"]["rules"] == RULES
        assert r["replay_rechecked"]["before"] == {"replay_ms": 0.001, "replay_winner": "replay:r1s0"}
        assert (r["seconds"], r["attempts"], r["builtin_ms"]) == (42.0, [eager], 10.0)
    assert not any(kb.replay_under_older_rules(r) for r in latest.values())
    again = latest["L1_4"]["replay_candidate"]
    assert again["accepted"] and again["ms"] != 20.0 and again["rules"] == RULES
