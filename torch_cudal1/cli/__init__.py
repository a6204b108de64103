"""``cudal1`` command line. Each subcommand lives in its own module exposing
``register(subparsers)``, which adds its parser (``_common.add_parser``: the shared flags) and
sets ``func``; ``func(args)`` returns the exit code (0 success, 1 a negative result such as a
rejected candidate, 2 usage or setup error). Every bad value (a flag, a ``CUDAL1_*`` variable,
an option, an unwritable cache dir) is one ``cudal1: error: ...`` line and exit 2."""
from __future__ import annotations

import argparse
import importlib
import sys

from ._common import UsageError

SUBCOMMAND_MODULES = ("demo_cmd", "optimize_cmd", "verify_cmd", "bench_cmd", "engine_cmd", "cache_cmd",
                      "warm_cmd")


def build_parser() -> argparse.ArgumentParser:
    from ._common import COMMON
    parser = argparse.ArgumentParser(prog="cudal1", parents=[COMMON], description=(
        "torch_cudal1: verified, cached kernel search for torch.compile(backend='cudal1')."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{name}":
                continue   # subcommand not built in this version
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..cache.store import CacheDirError
    from ..options import OptionError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if not hasattr(args, "cache_dir"):
        args.cache_dir = None
    try:
        from ._common import resolve_options
        resolve_options(args=args)      # a bad CUDAL1_* value fails every command the same way
        return int(args.func(args) or 0)
    except (UsageError, OptionError, CacheDirError) as e:
        print(f"cudal1: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
