"""The honest candidates in tests/adversarial/ (the other side of each check) through the real
verifier: each is accepted, at float64, in the OS sandbox where there is one. And the checks that
compare with the reference's answers again and again (caches, reused buffers, seeds, repeats)
with those answers recomputed from each draw's buffers instead of kept, as for graphs whose
outputs do not fit the device several times over (verify/references.py)."""
import pytest

from adversarial_cases import (FILES, HEADER, build_cache, check_verdict,  # noqa: F401
                               expect_of, host_marks, verdict_cases)


@pytest.mark.parametrize("path,forkserver", verdict_cases(honest=True))
def test_candidate_verdict(path, forkserver, build_cache, monkeypatch):  # noqa: F811
    check_verdict(path, forkserver, build_cache, monkeypatch)


# Honest candidates: one per task (the answers recomputed are the task's, whoever answers).
RECOMPUTED = [p for p in FILES if p.stem.startswith(("cache_", "output_buffer", "empty_",
                                                     "seed_", "noisy", "constant", "input_",
                                                     "thread_", "lazy_"))]
_FIRST_HONEST: dict = {}
for _p in FILES:
    if _p.stem.startswith("honest_"):
        _FIRST_HONEST.setdefault(HEADER.match(_p.read_text()).group(1), _p)
RECOMPUTED = sorted(RECOMPUTED + list(_FIRST_HONEST.values()))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=host_marks(p, expect_of(p)))
                                  for p in RECOMPUTED])
def test_candidate_verdict_with_answers_recomputed(path, build_cache, monkeypatch):  # noqa: F811
    check_verdict(path, "1", build_cache, monkeypatch, recomputed=True)
