"""Engines by name: one registration each, validated by the options, offered by the command line."""
import pytest

from torch_cudal1 import engines
from torch_cudal1.engines import registry
from torch_cudal1.engines.base import Engine
from torch_cudal1.options import OptionError, Options


def test_the_registered_engines():
    assert set(registry.names()) == {"builtin", "openai", "vllm", "replay"}
    assert registry.engine_class("builtin").name == "builtin"
    with pytest.raises(ValueError, match="unknown engine"):
        registry.engine_class("nope")


class Echo(Engine):
    name = "echo"

    def __init__(self, options):
        self.options = options

    def propose(self, task, history, ctx):
        return []


def test_options_validate_against_the_registry(monkeypatch):
    with pytest.raises(OptionError, match="engine"):
        Options.resolve({"engine": "nope"}, env={})
    monkeypatch.setitem(registry._ENGINES, "echo", f"{__name__}:Echo")
    opts = Options.resolve({"engine": "echo"}, env={})      # one registration is all it takes
    assert isinstance(engines.create(opts), Echo)


def test_the_command_line_offers_the_registered_engines(capsys):
    from torch_cudal1.cli import build_parser
    with pytest.raises(SystemExit):
        build_parser().parse_args(["optimize", "t.py", "--engine", "nope"])
    err = capsys.readouterr().err
    assert all(name in err for name in registry.names())


def test_a_second_registration_under_a_taken_name_fails():
    with pytest.raises(ValueError, match="registered already"):
        registry.register("builtin", ".replay:ReplayEngine")
