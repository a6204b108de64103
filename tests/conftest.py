import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def pytest_collection_modifyitems(config, items):
    import torch
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run with -m gpu on the device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# Under pytest-xdist (the README's test command runs two workers), a test holds the host alone
# unless it or its module is marked "concurrent": most tests judge times (the clock's
# cross-check, the noise rule, limits in proportion to the reference, background work waited
# for) or look for processes and files left on the host, and those must not share it. The
# device lock's readers-writer lock across processes (its turnstile keeps a test waiting to hold
# the host alone from being starved by concurrent ones), over a folder of this run's own, covers
# each test's setup, call and teardown.
_HOST = None


def _host_lock(run: str):
    global _HOST
    if _HOST is None:
        from torch_cudal1.bench.device_lock import DeviceLock
        d = Path(tempfile.gettempdir()) / f"cudal1-tests-{run}"
        d.mkdir(exist_ok=True)
        _HOST = DeviceLock("cpu", directory=str(d))
    return _HOST


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    # a GPU's timings are the device lock's to keep apart (torch_cudal1/bench/device_lock.py);
    # CUDAL1_TESTS_SHARE_HOST=1: a many-core host whose timings have cores of their own
    # (CUDAL1_TIMING_CPUS, as benchmarks/gpu/verifier.sh runs the CPU tests)
    if not run or "gpu" in item.keywords or os.environ.get("CUDAL1_TESTS_SHARE_HOST") == "1":
        yield
        return
    host = _host_lock(run)
    with host.shared() if item.get_closest_marker("concurrent") else host.exclusive():
        yield


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUDAL1_CACHE_DIR", str(d))
    return d


@pytest.fixture
def kernelbench_rows():
    """The CUDA-L1 KernelBench rows (../shared/kernelbench), or skip when absent."""
    import json
    path = Path(os.environ.get("CUDAL1_KERNELBENCH", SHARED / "kernelbench" / "cudal1_h100_dev.jsonl"))
    if not path.exists():
        pytest.skip(f"{path} not present")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _fresh_foreground_budget():
    """Each test starts with none of this process's foreground search budget spent, as a fresh
    process would: the suite's earlier searches are not the test's."""
    from torch_cudal1.serve.foreground import FOREGROUND
    FOREGROUND.reset()
    yield
