"""What every subcommand shares: the ``--cache-dir`` and ``--device`` flags (same spelling,
default and help everywhere), help text from module docstrings, option and cache-dir errors as
one line (exit 2), and small file helpers."""
from __future__ import annotations

import argparse
import re
from pathlib import Path


class UsageError(Exception):
    """Exit code 2: bad arguments or a setup problem (missing file, no GPU for --device cuda)."""


CACHE_DIR_HELP = ("cache directory (default: CUDAL1_CACHE_DIR, else $XDG_CACHE_HOME/torch_cudal1 "
                  "or ~/.cache/torch_cudal1); accepted before or after the command")
DEVICE_HELP = "cpu, cuda or cuda:N (default: cuda when a GPU is available, else cpu)"


def common_parser() -> argparse.ArgumentParser:
    """A parent parser for every parser of the command line: ``--cache-dir`` is accepted before
    the command and after it (SUPPRESS: an absent flag does not overwrite one given earlier)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--cache-dir", default=argparse.SUPPRESS, metavar="DIR", help=CACHE_DIR_HELP)
    return p


COMMON = common_parser()


def add_parser(sub, name: str, doc: str | None = None, **kwargs) -> argparse.ArgumentParser:
    """``sub.add_parser`` with the shared flags and, from ``doc`` (a module docstring), a clean
    description (its first paragraph) and epilog (the rest)."""
    if doc:
        head, _, rest = doc.strip().partition("\n\n")
        kwargs.setdefault("description", plain(head))
        if rest.strip():
            kwargs.setdefault("epilog", plain(rest))
            kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    return sub.add_parser(name, parents=[COMMON], **kwargs)


def plain(text: str) -> str:
    """Docstring text without reStructuredText markup (``code``, *emphasis*, :role:`x`)."""
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    text = text.replace("``", "")
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", text)
    return text.strip()


def add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None, metavar="DEVICE", help=DEVICE_HELP)


def resolve_device(name: str | None) -> str:
    """The device a ``--device`` value names: cuda when a GPU is there and none was given."""
    import torch
    device = name or ("cuda" if torch.cuda.is_available() else "cpu")
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
        raise UsageError(f"--device must be cpu, cuda or cuda:N, not {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--device {device} requested but no CUDA GPU is available")
    return device


def cache_dir(args) -> str | None:
    return getattr(args, "cache_dir", None)


def build_dir(args) -> str | None:
    """Where candidates' builds are kept: ``<cache dir>/build`` when ``--cache-dir`` was given,
    else the verifier's default (CUDAL1_BUILD_CACHE_DIR or the default cache dir's)."""
    d = cache_dir(args)
    return str(Path(d).expanduser() / "build") if d else None


def resolve_options(over: dict | None = None, args=None):
    """Options (defaults < CUDAL1_* < ``over`` < ``--cache-dir``); a bad value is a UsageError."""
    from ..options import Options
    over = {k: v for k, v in (over or {}).items() if v is not None}
    if args is not None and cache_dir(args):
        over["cache_dir"] = cache_dir(args)
    try:
        return Options.resolve(over)
    except ValueError as e:
        raise UsageError(str(e)) from None


def writable_store(opts):
    """The cache store of ``opts`` (with its remote tier), its directories created; a UsageError
    when the cache dir cannot be written."""
    from ..cache.store import CacheDirError
    from ..cache.tiered import store_for
    store = store_for(opts)
    try:
        store.ensure_writable()
    except CacheDirError as e:
        raise UsageError(str(e)) from None
    return store


def read_file(path: str, what: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} {path!r} does not exist")
    return p.read_text()


def check_device(device: str | None) -> str:
    return resolve_device(device)


def load_task(path: str):
    from ..task import Task
    read_file(path, "task file")
    task = Task.from_file(path)
    for name in ("class Model", "def get_inputs", "def get_init_inputs"):
        if name not in task.source:
            raise UsageError(f"{path}: not a KernelBench task (no {name!r})")
    return task
