import os
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
