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

from ..counters import STATS
from ..log import logger
from ..origin import Origin

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


def inductor_dynamic(gm: torch.fx.GraphModule, example_inputs, n_args: int):
    """Inductor's code for Dynamo's graph ``gm``, built inside the backend call where its example
    inputs carry the graph's symbolic sizes: one build serves every size. Called as
    ``fn(*args, *constants)`` like the runner's other implementations: only the first ``n_args``
    (Dynamo's inputs, which are the runner's where AOT's wrapper passes them through) are used."""
    from torch._inductor.compile_fx import compile_fx
    compiled = compile_fx(gm, list(example_inputs))   # called unboxed, as Dynamo calls it

    def call(*full):
        return compiled(*full[:n_args])
    return call


def inductor_on(gm: torch.fx.GraphModule, args: list):
    """Inductor's code for ``gm`` at the sizes of ``args`` (real tensors), through inductor's FX
    graph cache where it holds it."""
    from .arbiter import compile_cached
    return compile_cached(gm, list(args))


class Fallback:
    """The user's graph on the fallback: ``gm`` eagerly, or through inductor: ``prebuilt`` (a
    build for every size), else built at the first call of each input signature. Inductor failing
    to build or run falls back to eager, saying so once; the graph's own exceptions (the same as
    eager's) propagate. A graph running inside Dynamo's compiled code cannot be compiled by a
    nested ``torch.compile`` (Dynamo is disabled there and it would run eagerly): inductor is
    called directly."""

    def __init__(self, gm: torch.fx.GraphModule, kind: str, options, graph: str = "?",
                 prebuilt=None):
        self.gm, self.kind, self.options, self.graph = gm, kind, options, graph
        self.origin = str(Origin("fallback", kind))
        self._eager = kind == "eager"
        self._prebuilt = prebuilt
        self._built: dict = {}

    def _inductor(self, args):
        if self._prebuilt is not None:
            return self._prebuilt
        sig = tuple((tuple(a.shape), tuple(a.stride()), a.dtype, a.device)
                    if isinstance(a, torch.Tensor) else (type(a), a) for a in args)
        fn = self._built.get(sig)
        if fn is None:
            fn = self._built[sig] = inductor_on(self.gm, list(args))
        return fn

    def __call__(self, *args):
        if self._eager:
            return self.gm.forward(*args)
        try:
            return self._inductor(args)(*args)
        except Exception as e:  # noqa: BLE001 - inductor's failure is ours, not the user's
            try:
                out = self.gm.forward(*args)
            except Exception:
                raise e from None     # the graph itself fails on these inputs: the user's error
            self._eager = True
            report("serve", e, self.options, graph=self.graph,
                   instead="the graph eagerly instead of through inductor")
            return out
