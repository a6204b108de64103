"""A search that fails for a reason in the graph itself is remembered beside the cache: later
processes run the fallback at once instead of paying for the same verdict again; failures of the
machine are not remembered; ``cudal1 cache ls`` shows the record and ``cudal1 cache rm`` drops it."""
import json

import pytest

from helpers import run_python
from torch_cudal1.cache import failures
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cli import main
from torch_cudal1.search import loop, transaction
from torch_cudal1.search.loop import SearchError

RANDOM_GRAPH = """
import json, torch, torch_cudal1
def f(x):
    return torch.relu(x) + torch.rand_like(x)   # two answers to one input: no baseline verifies
c = torch.compile(f, backend="cudal1", options={"baselines": "eager", "rounds": 1, "trials": 2})
y = c(torch.randn(4, 8))
print(json.dumps({"shape": list(y.shape), "stats": torch_cudal1.stats()}))
"""


def test_a_graph_no_baseline_verifies_is_searched_once_across_processes(cache_dir, capsys):
    env = {"CUDAL1_CACHE_DIR": str(cache_dir)}
    first = run_python(RANDOM_GRAPH, env=env)
    assert first["shape"] == [4, 8]
    assert first["stats"]["searches"] == 1 and first["stats"]["fallback:search"] == 1
    second = run_python(RANDOM_GRAPH, env=env)
    assert second["shape"] == [4, 8] and not second["stats"].get("searches")
    assert second["stats"]["known_failures"] == 1 and second["stats"]["fallbacks"] == 1
    assert "not searched again" in second["_stderr"] and "cudal1 cache rm" in second["_stderr"]

    store = CacheStore(cache_dir)
    (key,) = failures.keys(store)
    assert main(["cache", "--cache-dir", str(cache_dir), "ls", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["key"] == key and row["status"].startswith("failed: at search") and not row["winner"]
    assert main(["cache", "--cache-dir", str(cache_dir), "rm", key[:10]]) == 0
    assert "searches again" in capsys.readouterr().out and failures.keys(store) == []


@pytest.mark.parametrize("of_the_graph", [True, False])
def test_only_failures_of_the_graph_are_remembered_and_only_by_this_version(
        tmp_path, monkeypatch, of_the_graph):
    store = CacheStore(tmp_path)

    def search(*a, **k):
        raise SearchError("no baseline passed verification: baseline:eager: "
                          + ("crash draw 0" if of_the_graph else "timeout over 30 s"),
                          of_the_graph=of_the_graph)
    monkeypatch.setattr(loop, "run_search", search)
    with pytest.raises(SearchError):
        transaction.search_and_store(store, "k1", {}, object(), None, "cpu")
    assert (failures.known(store, "k1") is not None) == of_the_graph
    if of_the_graph:
        with pytest.raises(failures.KnownFailure):
            transaction.search_and_store(store, "k1", {}, object(), None, "cpu")
        rec = json.loads(failures.path(store, "k1").read_text())
        failures.path(store, "k1").write_text(json.dumps({**rec, "version": "0.0.1"}))
        assert failures.known(store, "k1") is None   # another version searches it again


def test_a_timed_out_baseline_is_not_a_failure_of_the_graph():
    assert "timeout" not in failures.OF_THE_GRAPH and "memory" not in failures.OF_THE_GRAPH
    assert "sandbox" not in failures.OF_THE_GRAPH and "crash" in failures.OF_THE_GRAPH
