"""The package logger. One clear line per fallback; progress lines at INFO."""
from __future__ import annotations

import logging
import sys

logger = logging.getLogger("torch_cudal1")


def configure(level: str = "INFO") -> None:
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[cudal1] %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(getattr(logging, str(level).upper(), logging.INFO))
