"""``cudal1`` command line. Each subcommand lives in its own module exposing
``register(subparsers)``, which adds its parser and sets ``func``; ``func(args)`` returns the
exit code (0 success, 1 a negative result such as a rejected candidate, 2 usage or setup error)."""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMAND_MODULES = ("demo_cmd", "optimize_cmd", "verify_cmd", "bench_cmd", "engine_cmd", "cache_cmd",
                      "warm_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cudal1", description=(
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


class UsageError(Exception):
    """Exit code 2: bad arguments or a setup problem (missing file, no GPU for --device cuda)."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"cudal1: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
