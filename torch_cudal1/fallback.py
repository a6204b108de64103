"""The fallback boundary: what runs when a stage of the backend fails, and the one line saying so.

Every stage between Dynamo's graph and the served call (``STAGES``) reports its failure through
``report``: unless ``strict`` is set, the exception stops there, one warning names the stage and
the cause (the full traceback goes to a log file under the cache dir), and the graph runs on the
fallback (``Fallback``): the user's graph eagerly, or through inductor when ``fallback="inductor"``.
"""
from __future__ import annotations

import time
import traceback
from pathlib import Path

import torch

from .log import logger
from .runtime import STATS

# In the order a graph meets them: Dynamo's graph to ATen (aot_autograd), graph constants lifted
# into inputs, the key computed, the cache entry loaded (a hit, or the search's own winner), the
# graph rendered as a task, the search, the arbiter's in-process choice, the served calls.
STAGES = ("capture", "lift", "key", "load", "render", "search", "arbitrate", "serve")


def _cause(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def write_log(cache_dir: Path, name: str, graph: str, e: BaseException) -> str:
    """Append ``e``'s traceback to ``<cache_dir>/logs/<name>.log``; the path, or why there is none."""
    try:
        d = Path(cache_dir) / "logs"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{name}.log"
        with open(path, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} graph {graph}\n")
            f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
        return str(path)
    except OSError:
        return "(no log: cache dir not writable)"


def report(stage: str, e: BaseException, options, *, graph: str = "?", key: str = "?",
           instead: str | None = None) -> str:
    """The boundary: re-raise under ``strict``; otherwise count, log the traceback, and say in one
    warning which stage failed, why, and what runs instead. Returns the log's path."""
    if options.strict:
        raise e
    STATS["fallbacks"] += 1
    STATS[f"fallback:{stage}"] += 1
    name = key if key and key != "?" else (graph[:32] if graph and graph != "?" else "backend")
    log = write_log(options.cache_path, name, graph, e)
    what = f"graph {graph[:12]}" + (f" (key {key[:16]})" if key and key != "?" else "")
    logger.warning("%s failed for %s: %s; running %s. Log: %s", stage, what, _cause(e),
                   instead or f"the {options.fallback} fallback", log)
    return log


class Fallback:
    """The user's graph on the fallback: ``gm`` eagerly, or through inductor (built at its first
    call). Inductor failing to build or run falls back to eager, saying so once; the graph's own
    exceptions (the same as eager's) propagate."""

    def __init__(self, gm: torch.fx.GraphModule, kind: str, options, graph: str = "?",
                 dynamic: bool = False):
        self.gm, self.kind, self.options, self.graph = gm, kind, options, graph
        self.dynamic = dynamic
        self._fn = gm.forward if kind == "eager" else None
        self.origin = f"fallback:{kind}"

    def __call__(self, *args):
        fn = self._fn
        if fn is None:
            fn = self._fn = torch.compile(self.gm.forward, dynamic=self.dynamic or False)
        if self.kind == "eager" or fn is self.gm.forward:
            return fn(*args)
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - inductor's failure is ours, not the user's
            try:
                out = self.gm.forward(*args)
            except Exception:
                raise e from None     # the graph itself fails on these inputs: the user's error
            self._fn = self.gm.forward
            report("serve", e, self.options, graph=self.graph, instead="the eager fallback")
            return out
