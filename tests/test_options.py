import pytest
import torch

from torch_cudal1.options import Options


def test_defaults_env_and_options_precedence(tmp_path):
    env = {"CUDAL1_CACHE_DIR": str(tmp_path / "env"), "CUDAL1_ROUNDS": "5", "CUDAL1_STRICT": "yes",
           "CUDAL1_MODE": "cache-only"}
    opts = Options.resolve({"rounds": 1, "cache_dir": str(tmp_path / "opt")}, env=env)
    assert opts.rounds == 1                      # options win over the environment
    assert opts.cache_dir == str(tmp_path / "opt")
    assert opts.strict is True and opts.mode == "cache-only"   # environment wins over defaults
    assert Options.resolve({}, env={}).mode == "search"


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CUDAL1_CACHE_DIR", raising=False)
    assert Options.resolve().cache_dir == str(tmp_path / "torch_cudal1")


def test_unknown_key_lists_valid_keys():
    with pytest.raises(ValueError) as e:
        Options.resolve({"roundz": 3}, env={})
    assert "roundz" in str(e.value) and "rounds" in str(e.value) and "cache_dir" in str(e.value)


@pytest.mark.parametrize("bad", [{"mode": "sometimes"}, {"rounds": "many"}, {"strict": "perhaps"},
                                 {"pair_reference": "always"}, {"serve_check": "sometimes"},
                                 {"serve_check": "0"}])
def test_invalid_values_are_clear_errors(bad):
    with pytest.raises(ValueError):
        Options.resolve(bad, env={})


def test_serve_check_takes_first_off_or_one_call_in_n():
    assert Options.resolve({}, env={}).serve_check_every() == 0
    assert Options.resolve({"serve_check": "OFF"}, env={}).serve_check == "off"
    assert Options.resolve({"serve_check": 100}, env={}).serve_check_every() == 100
    assert Options.resolve({}, env={"CUDAL1_SERVE_CHECK": "50"}).serve_check_every() == 50


def test_unknown_key_through_torch_compile_raises_value_error(cache_dir):
    f = torch.compile(lambda x: x + 1, backend="cudal1", options={"no_such_option": 1})
    with pytest.raises(Exception) as e:
        f(torch.randn(3))
    chain, exc = [], e.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or getattr(exc, "inner_exception", None)
        if exc in chain:
            break
    assert any(isinstance(x, ValueError) and "valid options" in str(x) for x in chain)


def test_pair_reference_is_on_by_default_on_a_gpu_only():
    opts = Options.resolve({}, env={})
    assert opts.pairs_reference("cuda:0") and not opts.pairs_reference("cpu")
    assert Options.resolve({}, env={"CUDAL1_PAIR_REFERENCE": "on"}).pairs_reference("cpu")
    assert not Options.resolve({"pair_reference": "off"}, env={}).pairs_reference("cuda")


def test_every_option_has_a_group_and_docs_options_names_it():
    from pathlib import Path

    from torch_cudal1.options import GROUPS
    groups = Options.groups()
    assert list(groups) == list(GROUPS)
    assert sorted(sum(groups.values(), [])) == sorted(Options.keys())
    doc = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text()
    assert all(f"`{name}`" in doc for name in Options.keys())


def test_environment_only_settings_are_read_in_options(monkeypatch):
    from pathlib import Path

    from torch_cudal1.options import ENV_ONLY, env, env_off, env_on
    monkeypatch.delenv("CUDAL1_NATIVE", raising=False)
    assert env("CUDAL1_NATIVE") == "auto"
    monkeypatch.setenv("CUDAL1_NATIVE", "")
    assert env("CUDAL1_NATIVE") == "auto"               # empty is unset
    monkeypatch.setenv("CUDAL1_DEVICE_LOCK", "off")
    assert env_off("CUDAL1_DEVICE_LOCK") and not env_on("CUDAL1_DEVICE_LOCK")
    with pytest.raises(KeyError):
        env("CUDAL1_NO_SUCH_THING")
    doc = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text()
    assert all(f"`{name}`" in doc for name in ENV_ONLY)
    # no other module of the package reads a CUDAL1_* variable itself (setting one for a child
    # process is no reading)
    import re
    reads = re.compile(r"(environ\.get|getenv)\(\s*[\"']CUDAL1_"
                       r"|environ\[\s*[\"']CUDAL1_\w+[\"']\s*\](?!\s*=)")
    package = Path(__file__).resolve().parents[1] / "torch_cudal1"
    readers = [str(p.relative_to(package)) for p in package.rglob("*.py")
               if p.name != "options.py" and reads.search(p.read_text())]
    assert readers == []
