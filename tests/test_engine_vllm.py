"""The in-process vLLM engine: a clear engine error when vLLM is missing (the search falls back)."""
import importlib.util

import pytest
from engine_helpers import make_task

from torch_cudal1.engines import EngineError, SearchContext, create
from torch_cudal1.options import Options


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_missing_vllm_is_an_engine_error(tmp_path):
    eng = create(Options.resolve({"engine": "vllm", "model": "m", "cache_dir": str(tmp_path)}, env={}))
    with pytest.raises(EngineError, match=r"pip install torch_cudal1\[vllm\]"):
        eng.propose(make_task(), [], SearchContext(round=1, samples=1))


def test_search_falls_back_when_the_engine_cannot_start(tmp_path):
    from torch_cudal1.search import run_search
    opts = Options.resolve({"engine": "replay", "baselines": "eager", "rounds": 2, "trials": 1,
                            "cache_dir": str(tmp_path), "progress": False}, env={})
    res = run_search(make_task(), opts, "cpu")   # replay without a transcript: EngineError
    res.cleanup()
    assert not res.complete and "replay_file" in res.stop_reason
    assert res.winner.candidate.origin == "baseline:eager" and res.winner.verdict.accepted
