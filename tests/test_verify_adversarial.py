"""Every false speedup in tests/adversarial/ through the real verifier (one child process each):
each must be rejected for the right reason, on the CPU here and on CUDA with ``-m gpu``. The honest
candidates, the other side of each check, are test_verify_honest.py's."""
import os
import re
from pathlib import Path

import pytest

from adversarial_cases import (ADV, FILES, SETTINGS, build_cache, case, check_verdict,  # noqa: F401
                               expect_of, host_marks, verdict_cases)
from torch_cudal1.contracts import Candidate
from torch_cudal1.verify import evaluate


def test_suite_has_both_sides():
    expects = [e for p in FILES for e in expect_of(p).split("|")]
    assert expects.count("ok") >= 6
    for reason in ("lazy_output", "stale_output", "async_work", "input_mutated", "output_aliased",
                   "mismatch", "timer_tampering", "seed_dependent", "nondeterministic",
                   "forbidden_call", "timeout", "crash", "memory", "build_error", "global_state",
                   "stride", "no_model_new", "dtype", "shape", "nan"):
        assert reason in expects, reason


@pytest.mark.parametrize("path,forkserver", verdict_cases(honest=False))
def test_candidate_verdict(path, forkserver, build_cache, monkeypatch):  # noqa: F811
    check_verdict(path, forkserver, build_cache, monkeypatch)


# The same candidates judged on a GPU (pytest -m gpu): the defences must hold where the
# outputs come back from device memory and the clock is CUDA's. "# on cuda: reason" in a
# candidate names its verdict there where it differs from the CPU's.
ON_CUDA = re.compile(r"# on cuda: (\S+)")
CPU_ONLY = {"triton_private_caches.py"}   # Triton's interpreter: a CPU-only path
CUDA_CASES = [p for p in FILES if p.name not in CPU_ONLY]


@pytest.mark.gpu
@pytest.mark.parametrize("path", CUDA_CASES, ids=[p.stem for p in CUDA_CASES])
def test_candidate_verdict_on_cuda(path, build_cache, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    src, task, expect = case(path)
    expect = (ON_CUDA.search(src) or re.search(r"(.*)", expect)).group(1)
    kw = {"timeout_s": 180, "time_budget_s": 0.3, **SETTINGS.get(path.name, {})}
    verdict, timing = evaluate(task, Candidate(src, origin=f"test:{path.stem}"), device="cuda",
                               build_cache_dir=build_cache, **kw)
    assert verdict.reason in expect.split("|"), (verdict.reason, verdict.detail)
    assert verdict.accepted == (expect == "ok")
    if expect == "ok":
        assert timing is not None and timing.median_ms > 0


NO_AUDIT = re.compile(r"# without the audit hook: (\S+)")
BEHIND_THE_HOOK = [p for p in FILES if NO_AUDIT.search(p.read_text())]


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=host_marks(p, NO_AUDIT.search(p.read_text()).group(1)))
    for p in BEHIND_THE_HOOK])
def test_the_judge_refuses_them_without_the_audit_hook(path, build_cache):
    """Defence in depth: what the audit hook stops first (frames taken to reach the worker's
    objects), the judge in its own process still refuses with the hook off."""
    src, task, _ = case(path)
    expect = NO_AUDIT.search(src).group(1)
    verdict, timing = evaluate(task, Candidate(src, origin=f"test:{path.stem}"),
                               build_cache_dir=build_cache, timeout_s=120, time_budget_s=0.3,
                               extra_env={"CUDAL1_AUDIT": "0"})
    if path.name == "timing_samples_edit.py" and verdict.accepted:
        # other processes kept every timed batch from telling an edit from noise: the judge's
        # clock then stands in, and the 3 ms it spins per call show
        assert timing.median_ms >= 2.5, timing
        return
    assert verdict.reason in expect.split("|"), (verdict.reason, verdict.detail)


NO_STATIC = re.compile(r"# without the static check: (\S+)")
BEHIND_THE_STATIC_CHECK = [p for p in FILES if NO_STATIC.search(p.read_text())]


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.stem, marks=host_marks(p, NO_STATIC.search(p.read_text()).group(1)))
    for p in BEHIND_THE_STATIC_CHECK])
def test_the_worker_refuses_them_without_the_static_check(path, build_cache, monkeypatch):
    """What the static check refuses by name, the worker's audit hook still refuses at run time
    (names can be built at run time, past any reading of the source)."""
    from torch_cudal1.verify import static
    src, task, _ = case(path)
    assert static.check_source(src)[0] == "forbidden_call"
    monkeypatch.setattr(static, "check_source", lambda source: ("ok", ""))
    verdict, _ = evaluate(task, Candidate(src, origin=f"test:{path.stem}"),
                          build_cache_dir=build_cache, timeout_s=120, time_budget_s=0.3)
    assert verdict.reason in NO_STATIC.search(src).group(1).split("|"), verdict
    assert not verdict.detail.startswith("static check"), verdict.detail


def test_forbidden_write_left_no_file():
    assert not (Path.home() / "cudal1_forbidden_write_probe").exists()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    assert not (Path(cache) / "cudal1_cache_plant_probe").exists()
    assert not Path("/tmp/cudal1_shared_tmp_probe").exists()


def test_engine_code_compiles_into_private_caches(tmp_path, monkeypatch):
    """A candidate from an engine that uses torch.compile is accepted, and inductor's files for
    it land in a cache of its own under the build cache, not in the user's inductor cache; the
    harness's own candidates keep sharing the user's caches (their compiles are reused)."""
    user_cache = tmp_path / "user_inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(user_cache))
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", "0")
    src, task, _ = case(ADV / "honest_private_files.py")
    builds = tmp_path / "builds"
    verdict, _ = evaluate(task, Candidate(src, origin="openai:r1s0"), build_cache_dir=str(builds),
                          timeout_s=300, time_it=False)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    private = [p for p in builds.glob("*.jit/inductor") if any(p.rglob("*.py"))]
    assert private, sorted(str(p) for p in builds.rglob("*"))[:20]
    assert not user_cache.exists() or not any(user_cache.rglob("*.py"))
    verdict, _ = evaluate(task, Candidate(src, origin="builtin:test"), build_cache_dir=str(builds),
                          timeout_s=300, time_it=False)
    assert verdict.accepted and any(user_cache.rglob("*.py"))


@pytest.mark.parametrize("name", ["draw_swap_per_call.py", "randn_swap_per_call.py"])
def test_what_the_draw_calls_swapped_for_one_call_buys_no_time(name, build_cache):
    """Work moved into the harness's untimed draw (the task's get_inputs or torch.randn swapped
    for the next draw only, put back before any check) made such a candidate look many times faster;
    the harness's draw runs its own copies, so it is timed at the reference's own speed."""
    src, task, _ = case(ADV / name)
    verdict, timing = evaluate(task, Candidate(src, origin=f"test:{name}"),
                               build_cache_dir=build_cache, timeout_s=120, time_budget_s=0.5,
                               pair_reference=True)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    assert timing.median_ms > 0.4 * timing.extra["paired_ref_ms"], timing
