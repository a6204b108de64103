"""benchmarks/real_archs.py: the plain-PyTorch ResNet-18 / BERT layer / GPT-2 block that
benchmarks/real_models.py falls back to without torchvision / transformers (CPU, small shapes)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import real_archs, real_models

# values and verdicts only: may share the host with other such tests (tests/conftest.py)
pytestmark = pytest.mark.concurrent

ROOT = Path(__file__).resolve().parents[1]


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def test_resnet18_layout_and_param_count():
    m = real_archs.ResNet18().eval()
    assert n_params(m) == 11_689_512                  # torchvision.models.resnet18(): 11,689,512
    assert m.conv1.kernel_size == (7, 7) and m.conv1.stride == (2, 2)
    assert m.layer1[0].downsample is None
    for i, w in enumerate((64, 128, 256, 512)):
        layer = getattr(m, f"layer{i + 1}")
        assert len(layer) == 2 and layer[1].conv2.out_channels == w
        if i:
            assert layer[0].downsample[0].kernel_size == (1, 1) and layer[0].conv1.stride == (2, 2)
    with torch.no_grad():
        assert m(torch.randn(2, 3, 64, 64)).shape == (2, 1000)


def test_resnet18_matches_torchvision():
    torchvision = pytest.importorskip("torchvision")
    ref = torchvision.models.resnet18(weights=None).eval()
    m = real_archs.ResNet18().eval()
    assert n_params(m) == n_params(ref)
    m.load_state_dict(ref.state_dict(), strict=True)   # same submodule names and shapes
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(m(x), ref(x))


@pytest.mark.parametrize("small", [True, False])
def test_transformer_blocks_shapes_and_params(small):
    z = real_models.sizes(small)
    bert = real_archs.BertLayer(z["hidden"], z["heads"], z["intermediate"]).eval()
    gpt2 = real_archs.GPT2Block(z["hidden"], z["heads"]).eval()
    assert bert.attention.output.LayerNorm.eps == 1e-12 and gpt2.ln_1.eps == 1e-5
    if not small:   # BERT-base / GPT-2 small: 7,087,872 parameters per layer, 12 layers ~ 85M
        assert n_params(bert) == n_params(gpt2) == 7_087_872
    x = torch.randn(2, 16, z["hidden"])
    with torch.no_grad():
        assert bert(x).shape == x.shape
        assert gpt2(x).shape == x.shape


def test_gpt2_block_is_causal_and_bert_is_not():
    torch.manual_seed(0)
    gpt2, bert = real_archs.GPT2Block(64, 4).eval(), real_archs.BertLayer(64, 4, 128).eval()
    x = torch.randn(2, 10, 64)
    y = x.clone()
    y[:, 7:] += torch.randn(2, 3, 64)                  # change the later tokens only
    with torch.no_grad():
        a, b = gpt2(x), gpt2(y)
        torch.testing.assert_close(a[:, :7], b[:, :7], rtol=0, atol=1e-5)
        assert not torch.allclose(a[:, 7:], b[:, 7:])
        assert not torch.allclose(bert(x)[:, :7], bert(y)[:, :7])   # bidirectional


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_matches_transformers(name):
    pytest.importorskip("transformers")
    ref, m = real_models.library_model(name, True).eval(), real_models.plain_model(name, True).eval()
    assert n_params(m) == n_params(ref)
    sd = ref.state_dict()
    if name == "gpt2":   # transformers' Conv1D stores (in, out); nn.Linear (out, in)
        sd = {k: v.t() if v.dim() == 2 else v for k, v in sd.items()}
    m.load_state_dict(sd, strict=True)
    x = torch.randn(2, 16, real_models.sizes(True)["hidden"])
    with torch.no_grad():
        torch.testing.assert_close(m(x), first(ref(x)), rtol=1e-5, atol=1e-5)


def test_build_falls_back_to_plain_torch(monkeypatch):
    built = real_models.build("gpt2", True, "cpu", torch.float32, impl="plain")
    assert built[2] == "plain-torch" and built[1][0].shape == (2, 16, 128)
    monkeypatch.setitem(sys.modules, "transformers", None)      # import transformers -> ImportError
    monkeypatch.setitem(sys.modules, "torchvision", None)
    for name in ("resnet18", "bert", "gpt2"):
        assert real_models.build(name, True, "cpu", torch.float32)[2] == "plain-torch"
        assert real_models.build(name, True, "cpu", torch.float32, impl="library") is None


def test_results_written_after_every_model(tmp_path, monkeypatch):
    """A run cut short (here: interrupted during the second model) keeps the first model's record."""
    calls = []

    def fake_run_one(name, dtype, args):
        calls.append(name)
        if len(calls) > 1:
            raise KeyboardInterrupt   # stands in for a time limit
        return {"model": name, "impl": "plain-torch", "dtype": dtype, "batch": 2, "eager_ms": 1.0}
    monkeypatch.setattr(real_models, "run_one", fake_run_one)
    with pytest.raises(KeyboardInterrupt):
        real_models.main(["--models", "resnet18,gpt2", "--dtypes", "fp32", "--out", str(tmp_path)])
    assert [r["model"] for r in json.loads((tmp_path / "real_models.json").read_text())] == ["resnet18"]
    assert "| resnet18 | plain-torch | fp32 |" in (tmp_path / "real_models.md").read_text()


@pytest.mark.slow   # an inductor compile: ~10 s with a warm inductor cache, ~45 s cold on 2 cores
def test_smoke_run_writes_both_files(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.setdefault("OMP_NUM_THREADS", "1")                 # small shapes: threads only add noise
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")   # no compile-worker pool to start
    # one model: a second adds its inductor compile and nothing the files show that one does not
    cmd = [sys.executable, "benchmarks/real_models.py", "--small", "--models", "gpt2",
           "--dtypes", "fp32", "--skip-cudal1", "--out", str(tmp_path)]
    p = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    recs = json.loads((tmp_path / "real_models.json").read_text())
    assert [r["model"] for r in recs] == ["gpt2"]
    for r in recs:
        assert r["impl"] in ("torchvision", "transformers", "plain-torch")
        assert r["eager_ms"] > 0 and r["inductor_ms"] > 0
    md = (tmp_path / "real_models.md").read_text().splitlines()
    assert md[0].startswith("| model | impl | dtype |") and len(md) == 2 + 1


def test_paired_ratio_is_against_the_fastest_baseline_of_each_round():
    """Every mode measured counts as a baseline: cudal1 is compared, round by round, with the
    fastest of them in that round."""
    rec = {"rounds_ms": {"eager": [4.0, 4.0, 4.0], "inductor": [2.0, 3.0, 2.0],
                         "reduce_overhead": [1.0, 2.0, 4.0], "cudal1": [1.5, 1.5, 1.5]}}
    assert real_models.paired_ratio(rec) == pytest.approx(0.75)   # ratios 1.5, 0.75, 0.75
    del rec["rounds_ms"]["reduce_overhead"]
    assert real_models.paired_ratio(rec) == pytest.approx(0.75)   # 0.75, 0.5, 0.75
    assert real_models.paired_ratio({"rounds_ms": {"eager": [1.0]}}) is None
    # another cudal1 column, against the same baselines
    rec["rounds_ms"]["cudal1_graphed"] = [1.0, 1.0, 4.0]
    assert real_models.paired_ratio(rec, "cudal1_graphed") == pytest.approx(0.5)   # 0.5, 0.33, 2
    # a mode timed in its own process: inductor's time in each round here times its ratio there
    rec["trees"] = {"max_autotune": {"vs_inductor": 0.5}, "reduce_overhead": {"error": "died"}}
    assert real_models.paired_ratio(rec) == pytest.approx(1.5)   # 1.5 / min(2, 4, 1) ...


def test_fresh_ratio_pairs_cudal1_with_the_baselines_of_the_warm_start_process():
    """The second pairing: cudal1 from the cache against eager and inductor in the warm-start
    process, the CUDA-graph modes through their ratio to inductor in theirs; the main process's
    rounds do not enter it."""
    rec = {"model": "m", "dtype": "fp32", "rounds_ms": {"eager": [4.0], "inductor": [4.0],
                                                        "cudal1": [1.0]},
           "trees": {"reduce_overhead": {"vs_inductor": 0.5}}}
    assert real_models.fresh_ratio(rec) is None                  # no warm-start rounds recorded
    rec["warm_rounds_ms"] = {"eager": [3.0, 3.0, 3.0], "inductor": [2.0, 2.0, 4.0],
                             "cudal1": [1.5, 1.2, 2.6]}
    assert real_models.fresh_ratio(rec) == pytest.approx(1.3)    # 1.5, 1.2, 2.6 over 1, 1, 2
    assert real_models.paired_ratio(rec) == pytest.approx(0.5)   # the main process's: 1 / 2
    from benchmarks import real_models_table
    assert real_models_table.table([rec]).splitlines()[2].endswith("| 0.500 | 1.300 |")
    assert "fresh processes" in real_models.markdown([rec]).splitlines()[0]


def test_the_table_of_recorded_runs_shows_the_modes_measured():
    """``real_models_table.py``: torch.compile's CUDA-graph modes get columns where any run
    recorded them; each cudal1 column its paired ratio to the fastest baseline."""
    from benchmarks import real_models_table
    rec = {"model": "m", "dtype": "bf16", "eager_ms": 4.0, "inductor_ms": 2.0, "cudal1_ms": 1.5,
           "rounds_ms": {"eager": [4.0], "inductor": [2.0], "cudal1": [1.5]}}
    assert "reduce_overhead" not in real_models_table.table([rec])
    with_mode = dict(rec, reduce_overhead_ms=1.0,
                     trees={"reduce_overhead": {"vs_inductor": 0.5}})
    lines = real_models_table.table([with_mode, dict(rec, precision="highest")]).splitlines()
    assert lines[0].split(" | ")[5] == "reduce_overhead ms"
    # the float32 precision the run used; records made before it was recorded say so
    assert lines[2].split(" | ")[2] == "not recorded" and lines[3].split(" | ")[2] == "highest"
    # the last column: inductor's speed in the modes' process over here (not recorded: -)
    assert lines[2].split(" | ")[5:] == ["1.000", "1.500", "1.500", "- |"]
    assert lines[3].split(" | ")[5:] == ["-", "1.500", "0.750", "- |"]


def test_search_attempts_are_read_back_from_the_cache(tmp_path):
    """real_models.py reports, per cached graph, what its search tried (origin, verdict, time):
    where a cold search's time went and why a candidate did not win."""
    import torch_cudal1  # noqa: F401 - registers the backend
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    compiled = torch.compile(model, backend="cudal1",
                             options={"cache_dir": str(tmp_path), "baselines": "eager", "rounds": 0,
                                      "arbitrate": "off"})
    with torch.no_grad():
        compiled(torch.randn(4, 8))
    found = real_models.search_attempts(str(tmp_path))
    assert len(found) == 1
    (attempts,) = found.values()
    assert attempts[0]["origin"] == "baseline:eager" and attempts[0]["reason"] == "ok"
    assert attempts[0]["ms"] > 0 and attempts[0]["seconds"] >= 0


def test_modes_timed_on_a_loaded_host_are_flagged_not_compared():
    """torch.compile's modes enter the table through their ratio to inductor in their own
    process: where inductor ran at another speed there, the table says the row is not comparable."""
    def rec(there):
        return {"model": "resnet18", "impl": "torchvision", "dtype": "bf16", "batch": 32,
                "rounds_ms": {"inductor": [1.0, 1.1, 1.0], "cudal1": [0.9, 0.9, 0.9]},
                "trees": {"reduce_overhead": {"ms": 0.8, "vs_inductor": 0.8 / there,
                                              "inductor_rounds_ms": [there] * 3}}}
    quiet, loaded = rec(1.02), rec(1.5)
    assert real_models.modes_host_drift(quiet) == pytest.approx(1.02)
    assert real_models.modes_host_drift(loaded) == pytest.approx(1.5)
    assert real_models.modes_host_drift({"rounds_ms": {"inductor": [1.0]}}) is None
    assert "Not comparable" not in real_models.markdown([quiet])
    md = real_models.markdown([quiet, loaded])
    assert "Not comparable" in md and "resnet18 bf16 (1.50)" in md
    assert "| 1.020 |" in md.splitlines()[2] and "| 1.500 |" in md.splitlines()[3]


def test_modes_timed_beside_cudal1_in_the_fresh_process_count_as_they_are():
    """Where the warm-start process timed the modes too, the fresh-processes ratio pairs cudal1
    with them round by round; the scaled copy from the modes' own process no longer enters."""
    trees = {"reduce_overhead": {"vs_inductor": 0.5, "inductor_rounds_ms": [1.5] * 3}}
    scaled_only = {"trees": trees, "warm_rounds_ms": {"inductor": [2.0] * 3, "cudal1": [1.5] * 3}}
    assert real_models.fresh_ratio(scaled_only) == pytest.approx(1.5)   # against 0.5 * 2.0
    beside = {"trees": trees, "warm_rounds_ms": {"inductor": [2.0] * 3, "cudal1": [1.5] * 3,
                                                 "reduce_overhead": [1.6, 1.4, 1.6]}}
    assert real_models.fresh_ratio(beside) == pytest.approx(1.5 / 1.6)
    rec = dict(beside, model="resnet18", dtype="bf16", rounds_ms={"inductor": [1.0] * 3})
    assert "ratio timed them beside cudal1 and stands" in real_models.drift_note([rec])
