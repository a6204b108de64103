"""The command line behaves the same way in every command: ``--cache-dir`` before or after the
command, one ``--device`` default, help texts without docstring markup and with every flag
documented, and every bad value (flag, option, ``CUDAL1_*`` variable, unwritable cache dir) one
``cudal1: error:`` line and exit 2."""
import argparse
import io
import subprocess
import sys

import pytest

from helpers import RELU_TASK, ROOT
from torch_cudal1.cli import build_parser, main
from torch_cudal1.cli._common import DEVICE_HELP

TASK = RELU_TASK

# One invocation per command path, with its required arguments.
COMMANDS = [
    ["demo"], ["optimize", "t.py"], ["verify", "t.py", "c.py"], ["bench", "t.py"],
    ["engine", "start", "--model", "m"], ["engine", "status"], ["engine", "stop"],
    ["engine", "transcript-from-kernelbench", "a", "b"],
    ["cache", "ls"], ["cache", "show", "k"], ["cache", "rm", "k"], ["cache", "prune"],
    ["cache", "verify"], ["cache", "export", "f"], ["cache", "import", "f"],
    ["cache", "explain", "t.py"], ["warm", "r.py"],
]


def _parsers(parser, path=()):
    """(path, parser) of every parser of the command line."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_cache_dir_is_accepted_before_and_after_the_command(argv):
    parser = build_parser()
    assert parser.parse_args(["--cache-dir", "/x", *argv]).cache_dir == "/x"
    assert parser.parse_args([*argv, "--cache-dir", "/y"]).cache_dir == "/y"
    assert parser.parse_args(["--cache-dir", "/x", *argv, "--cache-dir", "/y"]).cache_dir == "/y"
    assert getattr(parser.parse_args(argv), "cache_dir", None) is None


def test_every_flag_is_documented_and_help_has_no_markup():
    seen = 0
    for path, parser in _parsers(build_parser()):
        for text in (parser.description, parser.epilog, parser.format_help()):
            assert "``" not in (text or ""), (path, text)
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help.strip(), (path, action.dest)
            seen += 1
        device = [a for a in parser._actions if "--device" in a.option_strings]
        if device:     # one default and one meaning everywhere
            assert device[0].default is None and device[0].help == DEVICE_HELP, path
    assert seen > 60


@pytest.mark.parametrize("env,argv,needle", [
    ({"CUDAL1_LOG_LEVEL": "bogus"}, ["cache", "ls"], "CUDAL1_LOG_LEVEL='bogus'"),
    ({"CUDAL1_LOG_LEVEL": "bogus"}, ["verify", "TASK", "TASK"], "CUDAL1_LOG_LEVEL='bogus'"),
    ({"CUDAL1_TIME_BUDGET_S": "-5"}, ["optimize", "TASK"], "CUDAL1_TIME_BUDGET_S=-5.0"),
    ({"CUDAL1_TIME_BUDGET_S": "-5"}, ["warm", "TASK"], "CUDAL1_TIME_BUDGET_S=-5.0"),
    ({}, ["optimize", "TASK", "--baselines", "eagr"], "options['baselines']='eagr'"),
    ({}, ["warm", "TASK", "-o", "baselines=eagr"], "options['baselines']='eagr'"),
    ({}, ["optimize", "TASK", "--device", "tpu"], "--device must be cpu, cuda or cuda:N"),
    ({}, ["cache", "ls", "--device", "cpu"], "unrecognized arguments"),
])
def test_every_bad_value_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, env, argv, needle):
    task = tmp_path / "task.py"
    task.write_text(TASK)
    monkeypatch.setenv("CUDAL1_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    argv = [str(task) if a == "TASK" else a for a in argv]
    try:
        rc = main(argv)
    except SystemExit as e:      # argparse's own errors: usage line + one error line
        rc = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith(("cudal1: error:", "usage:")) or "error:" in err[-1], err
    assert needle in err[-1], err
    if not needle.startswith("unrecognized"):
        assert len(err) == 1, err


def test_an_unwritable_cache_dir_is_one_line_and_exit_2(tmp_path):
    task = tmp_path / "task.py"
    task.write_text(TASK)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bad = str(blocker / "cache")          # cannot be created, even by root
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    for argv in (["optimize", str(task), "--device", "cpu"],
                 ["warm", str(task), "--device", "cpu"],
                 ["--cache-dir", bad, "cache", "import", str(task)]):
        if "--cache-dir" not in argv:
            argv = argv + ["--cache-dir", bad]
        proc = subprocess.run([sys.executable, "-m", "torch_cudal1", *argv], capture_output=True,
                              text=True, timeout=300, env=env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and lines[0].startswith("cudal1: error: cache dir"), proc.stderr
        assert "Traceback" not in proc.stderr and "writable" in lines[0]


def test_log_lines_go_above_the_warm_progress_bar(monkeypatch):
    from torch_cudal1.cli.warm_cmd import Progress
    from torch_cudal1.log import configure, logger

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    configure("INFO")
    before = list(logger.handlers)
    progress = Progress(total=2, quiet=False)
    assert progress.bar is not None
    logger.warning("a line from a unit")
    progress.step("unit one: done")
    progress.close()
    assert logger.handlers == before                      # the usual handlers are back
    lines = [seg.strip() for line in term.getvalue().split("\n") for seg in line.split("\r")]
    assert "[cudal1] a line from a unit" in lines, term.getvalue()
    assert "[1/2] unit one: done" in lines


def test_help_of_every_command_names_the_shared_flag():
    for path, parser in _parsers(build_parser()):
        assert "--cache-dir" in parser.format_help(), path
