"""The candidates of tests/adversarial/ (one file each, headed ``# task: <task>  expect: <reason>``)
and how each is put through the real verifier (one child process each). Shared by
test_verify_adversarial.py (false speedups, refused for their reason) and test_verify_honest.py
(honest rewrites, accepted; the answers-recomputed path)."""
import re
from pathlib import Path

import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, os_sandbox

ADV = Path(__file__).parent / "adversarial"
FILES = sorted(p for p in ADV.glob("*.py"))
HEADER = re.compile(r"# task: (\S+)\s+expect: (\S+)")
# Per-candidate settings that keep the slow failure modes quick.
SETTINGS = {"memory_hog.py": {"memory_limit_mb": 6144},
            # a first call that never returns ends at the verification's own limit
            "hang.py": {"timeout_s": 10},
            # its Triton kernel runs on the CPU through Triton's interpreter
            "triton_private_caches.py": {"extra_env": {"TRITON_INTERPRET": "1"}},
            # judged where the user allowed TF32 products
            "tanh_cut_off_at_high.py": {"precision": "high"},
            "honest_tanh_at_high.py": {"precision": "high"},
            # outputs too large for the worker to hold six calls of (2 MB each of at most 8 MB)
            "output_ring_large.py": {"extra_env": {"CUDAL1_VERIFY_HELD_BYTES": str(8 << 20)}},
            "honest_big_affine.py": {"extra_env": {"CUDAL1_VERIFY_HELD_BYTES": str(8 << 20)}}}

# Verdicts reached by the clock (reported times against the judge's, limits in proportion to the
# reference) or by what a candidate does over time between calls (a cache that goes stale, work
# left running), and candidates that read the clock themselves (a phase told by the rhythm of
# calls, which a loaded host's late wake-ups can keep from ever starting, so the candidate stays
# honest in its run). Under CI's two pytest-xdist workers such a case holds the host alone
# (tests/conftest.py). Every other case is decided by values, the static check, the audit hook or
# the facts of a call, none of which a test beside it changes, so it shares the host
# ("concurrent"): the device lock still keeps timings one at a time, and the judge leaves out of
# its clock's cross-check each batch during which others used the CPU.
BY_THE_CLOCK = frozenset({"timer_tampering", "timeout", "async_work", "stale_output", "memory"})
READS_CLOCK = re.compile(r"^\s*(import time\b|from time import)|perf_counter|monotonic|"
                         r"time\.time\(", re.M)


def case(path: Path):
    src = path.read_text()
    m = HEADER.match(src)
    assert m, f"{path.name} lacks the '# task: ... expect: ...' header"
    return src, Task.from_file(ADV / "tasks" / f"{m.group(1)}.py"), m.group(2)


def expect_of(path: Path) -> str:
    return HEADER.match(path.read_text()).group(2)


def host_marks(path: Path, expect: str) -> list:
    """The conftest's host-sharing mark for the case at ``path`` expected to get ``expect``
    ("a|b": either)."""
    if set(expect.split("|")) & BY_THE_CLOCK or READS_CLOCK.search(path.read_text()):
        return []
    return [pytest.mark.concurrent]


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("build_cache"))


# The whole suite runs with judges forked from the fork-server template (what CPU verification
# uses once the template is up); the cases where process handling matters most run again with
# judges started as plain interpreters.
PLAIN = {"forged_result.py", "crash_exit.py", "memory_hog.py", "forbidden_runtime.py",
         "timer_tamper_import.py", "honest_threads.py", "seed_42.py", "forged_reply_garbage.py"}
# Judged in a test of their own, which asserts more of the same verdict (kept out of this one's
# run: each takes 20-35 s of CI's time).
ELSEWHERE = {"hang_later.py": "test_verify_judge.py::test_a_call_that_hangs_later_is_cut_in_"
                              "proportion_to_the_reference",
             "honest_private_files.py": "test_verify_adversarial.py::test_engine_code_compiles_"
                                        "into_private_caches"}


def verdict_cases(honest: bool) -> list:
    """pytest params (path, forkserver) of the honest candidates, or of the others."""
    picked = [p for p in FILES if p.name not in ELSEWHERE and (expect_of(p) == "ok") == honest]
    cases = [(p, "1") for p in picked] + [(p, "0") for p in picked if p.name in PLAIN]
    return [pytest.param(p, f, id=f"{p.stem}-{'forked' if f == '1' else 'plain'}",
                         marks=host_marks(p, expect_of(p))) for p, f in cases]


def check_verdict(path: Path, forkserver: str, build_cache: str, monkeypatch,
                  recomputed: bool = False) -> None:
    """The candidate at ``path`` gets the verdict its header names. ``recomputed``: the judge
    keeps none of the reference's answers and recomputes each from its draw's buffers."""
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    monkeypatch.setenv("CUDAL1_VERIFY_FORKSERVER", forkserver)
    if recomputed:
        monkeypatch.setenv("CUDAL1_VERIFY_KEEP_BYTES", "0")
    src, task, expect = case(path)
    kw = {"timeout_s": 120, "time_budget_s": 0.3, **SETTINGS.get(path.name, {})}
    verdict, timing = evaluate(task, Candidate(src, origin=f"test:{path.stem}"),
                               build_cache_dir=build_cache, **kw)
    # "a|b": either reason is right (uninitialised memory may hold NaN or just wrong numbers).
    assert verdict.reason in expect.split("|"), (verdict.reason, verdict.detail)
    assert verdict.accepted == (expect == "ok")
    if expect == "ok":
        assert timing is not None and timing.median_ms > 0 and timing.n >= 10
        assert verdict.stats["references"] == ("recomputed" if recomputed else "kept")
        assert recomputed or verdict.stats["reference"] == "float64"
        assert verdict.stats["sandbox"] == ("bwrap" if os_sandbox.active() else "none")
    else:
        assert timing is None
        assert verdict.detail
