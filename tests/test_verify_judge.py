"""The judge (verify/judge.py) and what only it can decide: tolerances that follow the user's
float32 precision, a clock the candidate cannot edit, how long a call may take, and inputs that
a cache keyed on a few of their values cannot follow."""
import time
from pathlib import Path

import pytest
import torch

from torch_cudal1.contracts import Candidate
from torch_cudal1.harness.calls import mix
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate

ADV = Path(__file__).parent / "adversarial"


def _task(name: str) -> Task:
    return Task.from_file(ADV / "tasks" / f"{name}.py")


def _source(name: str) -> str:
    return (ADV / name).read_text()


@pytest.fixture(autouse=True)
def _forked(monkeypatch):
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "1")


def test_float32_tolerance_follows_the_users_precision():
    """Operands rounded to fp16 (TF32's 10 bits): refused at "highest", PyTorch's default,
    accepted where the user allowed TF32 ("high")."""
    task, src = _task("linear_act"), _source("fp16_operands.py")
    strict, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False, precision="highest")
    assert strict.reason == "mismatch" and "tolerance 1e-05" in strict.detail, strict.detail
    loose, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False, precision="high")
    assert loose.accepted, (loose.reason, loose.detail)
    assert loose.stats["precision"] == "high"
    honest, _ = evaluate(task, Candidate(_source("honest_fused_linear.py"), "test:fp32"),
                         time_it=False, precision="highest")
    assert honest.accepted and honest.stats["rel_error"] < 1e-5


def test_precision_defaults_to_this_processs_setting():
    task, src = _task("linear_act"), _source("fp16_operands.py")
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        verdict, _ = evaluate(task, Candidate(src, "test:fp16"), time_it=False)
    finally:
        torch.set_float32_matmul_precision(before)
    assert verdict.accepted and verdict.stats["precision"] == "high"


def test_the_judges_clock_bounds_what_reported_times_can_buy():
    """The cross-check on batch figures (seconds): reported times that account for the wall
    time pass unchanged; edited down by half, the median is scaled back up to 0.8 of it; under
    35% is tampering; a batch the host disturbed does not decide when the others agree, nor one
    during which other processes were busy; the harness's own candidates are never judged."""
    from torch_cudal1.verify.judge import Judge, Reject
    j = Judge.__new__(Judge)
    j.trusted = False

    def batches(s_share, n=4, per_call=0.003, overhead=0.0004):
        return [{"W": n * (per_call + overhead) + 1e-4, "S": s_share * n * per_call, "n": n,
                 "O": n * overhead, "ipc": 1e-4} for _ in range(5)]
    extra = {}
    assert j._cross_check(3.0, batches(1.0), extra) == 3.0 and extra["explained"] == 1.0
    extra = {}
    assert j._cross_check(1.5, batches(0.5), extra) == pytest.approx(2.4)
    assert extra["scaled_by_judge"] == pytest.approx(1.6)
    with pytest.raises(Reject) as r:
        j._cross_check(0.3, batches(0.1), {})
    assert r.value.verdict.reason == "timer_tampering"
    disturbed = batches(1.0)
    disturbed[0] = dict(disturbed[0], W=disturbed[0]["W"] * 10)   # one batch the host slowed
    extra = {}
    assert j._cross_check(3.0, disturbed, extra) == 3.0
    tiny = batches(0.0, per_call=1e-6)   # calls too short for the clock to tell: left alone
    assert j._cross_check(0.001, tiny, {}) == 0.001
    # other processes busy during a batch (CPU seconds they used): that batch decides nothing
    edited = batches(0.1)
    busy = [dict(b, busy=b["W"]) for b in edited[:3]] + [dict(b, busy=0.0) for b in edited[3:]]
    with pytest.raises(Reject):   # two quiet batches still tell
        j._cross_check(0.3, busy, {})
    # one quiet batch among busy ones may have waited too (the others' CPU is counted in 10 ms
    # ticks): not refused on it alone, its figure scaled up to what that batch took instead
    busy[3]["busy"] = busy[3]["W"]
    extra = {}
    assert j._cross_check(0.3, busy, extra) == pytest.approx(0.3 * 0.8 / 0.1)
    assert extra["host_busy_batches"] == 4
    all_busy = [dict(b, busy=b["W"]) for b in edited]
    extra = {}
    got = j._cross_check(0.3, all_busy, extra)   # nothing decidable: the judge's figure stands
    assert got == pytest.approx(extra["judge_ms"]) and got > 0.3 * 4 and "host busy" in extra["clock"]
    assert j._cross_check(3.0, [dict(b, busy=0.0) for b in batches(1.0)], {}) == 3.0
    # the whole batch's time reported on one call, the others near zero: the sum is right,
    # the median (what is reported) is not
    moved = [dict(b, M=1e-7) for b in batches(1.0)]
    with pytest.raises(Reject) as r:
        j._cross_check(1e-4, moved, {})
    assert r.value.verdict.reason == "timer_tampering"
    slow_tail = [dict(b, M=0.6 * b["S"] / b["n"]) for b in batches(1.0)]   # honest: a slow call
    assert j._cross_check(1.8, slow_tail, {}) == 1.8
    # calls each within the harness's noise, edited to nothing: over twenty batches they show
    small = batches(0.0, n=4, per_call=0.001) * 4
    with pytest.raises(Reject):
        j._cross_check(1e-4, small, {})
    assert j._cross_check(1.0, batches(1.0, n=4, per_call=0.001) * 4, {}) == 1.0
    # ...also where a few batches are decisive on their own: the many below the noise (work
    # done while the harness prepared the calls) must not outvote them as "accounted for"
    hidden = batches(0.03, n=4, per_call=0.0032, overhead=0.004) * 4
    hidden[0] = dict(hidden[0], W=hidden[0]["W"] + 0.02)      # a batch slow enough to decide
    with pytest.raises(Reject) as r:
        j._cross_check(1e-4, hidden, {})
    assert r.value.verdict.reason == "timer_tampering"
    honest = batches(1.0, n=4, per_call=0.0032, overhead=0.004) * 4
    honest[0] = dict(honest[0], W=honest[0]["W"] + 0.02)
    assert j._cross_check(3.2, honest, {}) == 3.2
    j.trusted = True   # a baseline or built-in candidate: recorded, not judged
    extra = {}
    assert j._cross_check(0.3, batches(0.1), extra) == 0.3 and extra["explained"] == 0.1


def test_the_judges_clock_allows_for_the_harness_as_it_costs_in_the_candidates_process():
    """Where the harness costs twice as much per call in the candidate's process as in the
    judge's (measured there on the reference before the import), honest short calls are not
    tampering; times edited down still are, and a process measured quicker changes nothing."""
    from torch_cudal1.verify.judge import Judge, Reject
    j = Judge.__new__(Judge)
    j.trusted = False

    def batches(s_share, per_call, harness=2.0, overhead=0.0004, n=40):
        return [{"W": n * (per_call + harness * overhead) + 1e-4, "S": s_share * n * per_call,
                 "n": n, "O": n * overhead, "ipc": 1e-4} for _ in range(5)]
    honest = batches(1.0, per_call=2e-5)
    with pytest.raises(Reject):   # judged as if the harness cost what it costs in the judge
        j._cross_check(0.02, honest, {})
    j.harness_ratio = 2.0
    extra = {}
    assert j._cross_check(0.02, honest, extra) == 0.02
    assert extra["explained"] == 1.0 and extra["harness_ratio"] == 2.0
    with pytest.raises(Reject) as r:   # 3 ms calls reported as 0.3 ms
        j._cross_check(0.3, batches(0.1, per_call=0.003), {})
    assert r.value.verdict.reason == "timer_tampering"
    j.harness_ratio = 0.5
    with pytest.raises(Reject):
        j._cross_check(0.02, honest, {})


def test_the_judges_clock_allows_for_the_harness_drifting_from_its_calibration():
    """Calls far shorter than the harness around them (a C extension's 30 us call in 550 us of
    harness): the harness's cost in the candidate's process, calibrated at 1.2x the judge's,
    costs 1.6x during the run (its threads' hand-offs moved across cores). That is within the
    harness's drift: the candidate is timed by the judge's clock, not refused. Work hidden
    beyond the drift is still refused."""
    from torch_cudal1.verify.judge import Judge, Reject
    j = Judge.__new__(Judge)
    j.trusted, j.harness_ratio = False, 1.2

    def batches(reported, worker_ratio, per_call=3e-5, overhead=5.5e-4, n=100, count=3):
        return [{"W": n * (per_call + worker_ratio * overhead) + 2e-4,
                 "S": reported * n * per_call, "n": n, "O": n * overhead, "ipc": 2e-4}
                for _ in range(count)]
    for count in (3, 4):   # pooled within the harness's noise; each batch deciding on its own
        extra = {}
        honest = batches(1.0, worker_ratio=1.6 if count == 3 else 1.75,
                         per_call=3e-5 if count == 3 else 1.5e-4, count=count)
        got = j._cross_check(3e-5, honest, extra)
        assert got > 3e-5 and extra["scaled_by_judge"] > 1.0
    with pytest.raises(Reject) as r:   # 0.5 ms of work in each call, reported as 30 us
        j._cross_check(3e-5, batches(0.06, worker_ratio=1.2, per_call=5e-4), {})
    assert r.value.verdict.reason == "timer_tampering"
    # what decided, for a refusal to be read afterwards: every batch's share, the busy left out
    assert "within its noise, 0 left out as the host's busy" in r.value.verdict.detail
    assert r.value.verdict.detail.endswith("drift's top: 0.18, 0.18, 0.18)"), r.value.verdict.detail


def test_the_harness_calibration_leaves_out_rounds_during_which_the_host_was_busy(monkeypatch):
    """The harness costs 1.2x per call in the candidate's process what it costs in the judge's.
    Rounds of the calibration during which another process took the CPU slowed the judge's side
    (a ratio of 0.3 there): they are left out, and the figure is the quiet rounds' upper
    quartile. Taken as the harness's cost, such a round's low ratio leaves most of the worker's
    harness for an honest candidate's short calls to explain (``timer_tampering``)."""
    import contextlib
    from torch_cudal1.verify import judge as judge_mod
    rounds = iter([(0.001, 0.0012, False)] + [(0.04, 0.012, True)] * 3
                  + [(0.01, r * 0.01, False) for r in (1.1, 1.2, 1.15, 1.25, 1.2)])
    now = {}

    class Runner:
        def run(self, calls):
            mine_s, now["theirs"], now["busy"] = next(rounds)
            time.sleep(mine_s)
            return {"calls": [{"ms": 0.0} for _ in calls]}

    class Worker:
        proc = None

        def ping(self):
            return 0.0

        def batch(self, calls, timeout_s, what):
            return {"calls": [{"ms": 0.0} for _ in calls]}, now["theirs"]

    class Others:
        def __init__(self, root):
            pass

        def start(self):
            pass

        def others_s(self):
            return 1.0 if now["busy"] else 0.0

    j = judge_mod.Judge.__new__(judge_mod.Judge)
    j.worker, j.req, j.batch, j.ref_call_s = Worker(), {}, 8, 1e-4
    j.lock = type("Lock", (), {"exclusive": lambda self: contextlib.nullcontext()})()
    j._reference_runner = lambda: contextlib.nullcontext((Runner(), None))
    j._timed_calls = lambda size, rng, run=True: [{}] * size
    j.call_timeout = lambda n, ref_s=None: 10.0
    monkeypatch.setattr(judge_mod, "OthersClock", Others)
    monkeypatch.setattr(judge_mod, "quiet_cpu", lambda host: contextlib.nullcontext())
    ratio = j._harness_ratio()
    assert 1.1 < ratio < 1.3, ratio
    assert j.harness_busy_rounds == 3 and len(j.harness_ratios) == judge_mod.HARNESS_ROUNDS


def test_the_harness_is_timed_in_the_candidates_process_before_its_import(tmp_path):
    """Short reference calls: the verifier times the harness on the reference in the worker
    before the candidate is there, and the figure reaches the timing's record."""
    task = Task.from_file(ADV / "tasks" / "own_table.py")
    src = (ADV / "honest_own_table.py").read_text()
    verdict, timing = evaluate(task, Candidate(src, "test:harness_ratio"),
                               build_cache_dir=str(tmp_path), time_budget_s=0.3)
    assert verdict.accepted, verdict
    assert 0.05 < timing.extra["harness_ratio"] < 20, timing.extra
    # the estimate taken off each call, and the calls' own reports (benchmarks/harness_drift.py)
    assert timing.extra["harness_ms"] > 0 and timing.extra["reported_mean_ms"] > 0, timing.extra


def test_a_call_that_hangs_later_is_cut_in_proportion_to_the_reference():
    t0 = time.monotonic()
    verdict, _ = evaluate(_task("diag_matmul"), Candidate(_source("hang_later.py"), "test:hang"),
                          timeout_s=300, time_budget_s=0.3)
    assert verdict.reason == "timeout", (verdict.reason, verdict.detail)
    assert time.monotonic() - t0 < 60   # not the 300 s limit of the whole verification


def test_partial_refill_keeps_structure():
    torch.manual_seed(0)
    a, b = torch.randn(6, 6), torch.randn(6, 6)
    sym_a, sym_b = a + a.T, b + b.T
    m = mix(sym_a, sym_b, seed=3)
    assert torch.equal(m, m.T) and not torch.equal(m, sym_a) and not torch.equal(m, sym_b)
    tri = mix(torch.triu(a), torch.triu(b), seed=4)
    assert torch.equal(tri, torch.triu(tri))
    x, y = torch.randn(8, 3, 5), torch.randn(8, 3, 5)

    def slices(z, d):   # along dimension d: which slices came from y (the rest must be x's)
        new = [bool(torch.equal(z.select(d, i), y.select(d, i))) for i in range(z.shape[d])]
        if any(new) and not all(new) and all(torch.equal(z.select(d, i), x.select(d, i))
                                             for i, n in enumerate(new) if not n):
            return new
        return None
    # floating inputs: whole slices along one dimension, drawn with the seed, so that some
    # refills leave values of every row as they were (a cache keyed on one column is stale)
    dims = set()
    for seed in range(24):
        z = mix(x, y, seed=seed)
        hit = [d for d in range(3) if slices(z, d) is not None]
        assert len(hit) == 1, (seed, hit)
        dims.add(hit[0])
        assert torch.equal(mix(x, y, seed=seed), z)   # the same seed, the same mix (both sides)
    assert dims == {0, 1, 2}
    # integer inputs (indices, offsets: their order along a row may matter): whole rows
    xi, yi = torch.randint(0, 9, (8, 5)), torch.randint(0, 9, (8, 5)) + 10
    for seed in range(8):
        zi = mix(xi, yi, seed=seed)
        assert all(torch.equal(zi[i], xi[i]) or torch.equal(zi[i], yi[i]) for i in range(8))
    one = mix(torch.randn(1, 7), torch.randn(1, 7), seed=6)   # batch of one: the next dimension
    assert one.shape == (1, 7)


def test_the_wide_draw_checks_where_the_reference_holds_and_says_where_it_skips():
    """Inputs 64 times as wide as get_inputs draws them: a softmax without its maximum subtracted
    overflows there and is refused, although right on every randn draw; a task whose reference
    overflows there itself is not judged on them, and the verdict says so."""
    naive, _ = evaluate(_task("softmax_rows"), Candidate(_source("softmax_without_max.py"),
                                                         "test:naive"), time_it=False)
    assert naive.reason == "nan" and "64 times as wide" in naive.detail, naive.detail
    honest, _ = evaluate(_task("softmax_rows"), Candidate(_source("honest_softmax_by_hand.py"),
                                                          "test:honest"), time_it=False)
    assert honest.accepted and honest.stats["wide_draw"] == "checked", honest.stats
    skipped, _ = evaluate(_task("exp_normalised"),
                          Candidate(_source("honest_stable_beside_naive_reference.py"),
                                    "test:stable"), time_it=False)
    assert skipped.accepted, (skipped.reason, skipped.detail)
    assert skipped.stats["wide_draw"].startswith("skipped: the reference itself is off"), \
        skipped.stats


def test_the_norm_bound_follows_the_native_error_over_fresh_draws_not_one_draws_luck():
    """An output that is a few small differences of larger terms (a ReLU cutting nearly all of
    an affine map, KernelBench's linear-subtract-multiply-ReLU) has its float32 error on a few
    elements, and on a lucky draw the native's is next to nothing: eight times it refused an
    honest reassociation now and then. Every element within bounds and only the norm over:
    judged again against the native's largest error on fresh draws (drawn until four had one).
    An answer off by far more than that is still refused."""
    from torch_cudal1.verify.judge import FLOOR_DRAWS_MAX, Judge
    j = Judge.__new__(Judge)
    j.compare_at, j.checker, j.value_tol, j.err_floor = "highest", None, None, None
    j.stateful, j.ref_hi, j.deadline = False, object(), time.monotonic() + 60
    hi = torch.zeros(640, dtype=torch.float64)
    hi[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.float64) / 128   # float32 holds them exactly

    def off(by, where=slice(0, 4)):
        x = hi.clone()
        x[where] += by
        return x.float()
    lucky = off(0.0)                               # the native exact on this draw
    answers = iter([off(0.0)] * 3 + [off(1e-7)] * 4)   # three fresh draws exact too
    fresh = []

    def draw(seed):
        fresh.append(seed)
        return [torch.zeros(1)]
    j.draw = draw
    j.reference = lambda inputs: ([next(answers)], [hi.clone()])
    honest = off(7e-7)                             # 3e-5 of the norm: over the 1e-5 bound
    reason, detail, stats = j.cmp([lucky], [honest], [hi])
    assert reason == "ok", detail
    assert len(fresh) == 7 and j.err_floor[0] == pytest.approx(2e-7, rel=0.05)
    wrong = off(3e-6, slice(3, 4))                 # each element within bounds, the norm not
    reason, _, stats = j.cmp([lucky], [wrong], [hi])
    assert reason == "mismatch" and stats["norm_only"] and len(fresh) == 7   # drawn once
    # a reference whose fresh draws never err leaves the bound as it was
    j.err_floor, answers = None, iter([off(0.0)] * FLOOR_DRAWS_MAX)
    assert j.cmp([lucky], [honest], [hi])[0] == "mismatch"
    assert len(fresh) == 7 + FLOOR_DRAWS_MAX
    j.err_floor, j.stateful = None, True           # a reference that keeps state: no fresh draws
    assert j.cmp([lucky], [honest], [hi])[0] == "mismatch" and len(fresh) == 7 + FLOOR_DRAWS_MAX
