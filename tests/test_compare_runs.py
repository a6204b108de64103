"""benchmarks/compare_runs.py --reruns: tasks run again, against their record before."""
import json
import math

from benchmarks import compare_runs


def test_reruns_compare_each_task_with_its_record_before(tmp_path, capsys):
    def rec(tid, eager, builtin, status="ok"):
        return json.dumps({"id": tid, "status": status, "eager_ms": eager, "builtin_ms": builtin})
    lines = [rec("L1_1", 1.0, 1.0), rec("L2_1", 0.1, 0.05), rec("L2_2", 0.2, 0.1),
             rec("L1_1", 1.0, 0.5), rec("L2_1", 0.2, 0.05), rec("L2_2", 0.1, 0.1, "harness_error")]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert compare_runs.main(["--reruns", str(tmp_path), "--since", "3"]) == 0
    out = capsys.readouterr().out
    # L2_2's rerun failed: only L1_1 (speedup 1 -> 2) and L2_1 (eager 0.1 -> 0.2, speedup 2 -> 4)
    assert out.startswith("2 tasks run again")
    assert f"all {2 * math.log(2):+.3f}" in out
    assert f"eager >= 0.3 ms (1 tasks) {math.log(2):+.3f}" in out
    assert f"eager < 0.3 ms (1 tasks) {math.log(2):+.3f}" in out
    assert f"mean {math.log(2) / 2:+.3f}" in out
    assert f"all 250 tasks: a factor of {4 ** (1 / 250):.4f}" in out   # the all-tasks geomean
    assert "| L2_1 | 5 | 0 | 0.200 | 0.050 () | 0.100 | 0.050 () |" in out   # per rerun
    assert "| L2_2 |" not in out
    assert compare_runs.main(["--reruns", str(tmp_path), "--since", "3", "--total", "4"]) == 0
    assert "all 4 tasks: a factor of 1.4142" in capsys.readouterr().out


def test_reruns_report_the_host_probe_where_both_records_have_it(tmp_path, capsys):
    def rec(tid, eager, host=None):
        r = {"id": tid, "status": "ok", "eager_ms": eager, "builtin_ms": eager}
        return json.dumps(r | ({"host_launch_us": host} if host else {}))
    lines = [rec("L1_1", 1.0, 5.0), rec("L2_1", 0.1), rec("L1_1", 1.5, 7.5), rec("L2_1", 0.2, 9.0)]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert compare_runs.main(["--reruns", str(tmp_path), "--since", "2"]) == 0
    assert "(1 tasks with both probes): x1.50" in capsys.readouterr().out


def test_reruns_report_how_far_inductor_moved(tmp_path, capsys):
    def rec(tid, inductor):
        return json.dumps({"id": tid, "status": "ok", "eager_ms": 1.0, "builtin_ms": 1.0,
                           "inductor_ms": inductor})
    lines = [rec("L1_1", 1.0), rec("L2_1", 0.1), rec("L3_1", 0.2),
             rec("L1_1", 0.5), rec("L2_1", 0.3), rec("L3_1", 0.2)]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert compare_runs.main(["--reruns", str(tmp_path), "--since", "3"]) == 0
    assert "inductor now / before (3 tasks): min x0.50, median x1.00, max x3.00" in \
        capsys.readouterr().out


def test_runner_phases_split_each_tasks_wall_time(tmp_path, capsys):
    from benchmarks import runner_phases

    def attempt(wall, build, verify, timing, lock, **more):
        return {"phases": {"wall_s": wall, "build_s": build, "verify_s": verify, "time_s": timing,
                           "lock_wait_s": lock, **more}}
    recs = [{"id": "L1_1", "attempts": [attempt(10, 1, 2, 1, 4), attempt(20, 2, 3, 0, 5)]},
            {"id": "L1_2", "attempts": [{"origin": "no phases"}]},
            {"id": "L1_3", "attempts": [attempt(5, 1, 1, 1, 0, reference_s=1, canary_s=1)]}]
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    t = runner_phases.task_phases(recs[0])
    assert (t["wall_s"], t["lock_wait_s"], t["other_s"], t["attempts"]) == (30, 9, 12, 2)
    assert runner_phases.main([str(tmp_path), "--since", "1"]) == 0
    out = capsys.readouterr().out
    assert "L1_1" not in out and "L1_2" not in out   # before --since; no phases recorded
    # wall, other, lock wait, reference, build, verify, time, paired reference, canary
    assert "| 2 | L1_3 | 1 | 5 | 0 | 0 | 1 | 1 | 1 | 1 | 0 | 1 |" in out
    assert out.rstrip().endswith("| | all | | 5 | 0 | 0 | 1 | 1 | 1 | 1 | 0 | 1 |")


def test_eager_switches_counts_every_timing_by_the_core_it_ran_on(tmp_path, capsys):
    """Which core the timings are given decides how often the host takes it from them (CPU 0,
    where the host's own interrupts land, against CPU 15): every timing counts, the first of one
    taken again too, under the timing CPUs it ran on."""
    from benchmarks import eager_switches

    def att(origin, ms, sw, cpus, retimed=None):
        a = {"origin": origin, "ms": ms, "host": {"involuntary_switches": sw, "timing_cpus": cpus}}
        return a | ({"retimed": {"involuntary_switches": retimed}} if retimed is not None else {})
    lines = [json.dumps({"id": "L1_1", "attempts": [att("baseline:eager", 1.0, 3, [0]),
                                                    att("builtin:x", 0.5, 2, [0], retimed=400)]}),
             json.dumps({"id": "L1_1", "attempts": [att("baseline:eager", 1.2, 60, [15])]})]
    assert dict(eager_switches.switches_by_timing_cpu(lines)) == {"0": [3, 2, 400], "15": [60]}
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert eager_switches.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 0 | 3 | 3 | 400 | 1 |" in out and "| 15 | 1 | 60 | 60 | 1 |" in out
    assert "| L1_1 | 1 | 60 |" in out   # the disturbed eager timing, listed
