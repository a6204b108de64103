"""``cudal1 warm RECIPE [--workers N] [--device DEVICE] [--ray [ADDRESS]] ...``

Fill the cache for every unit of a recipe (see ``torch_cudal1.warm``): a Python file with
``def models()``, a KernelBench task file, or a folder of them. Resumable: units whose keys are
all cached (recorded in ``<cache>/v1/warm/``) are skipped. ``--workers N`` runs N worker
processes, one per GPU (``CUDA_VISIBLE_DEVICES`` set per worker). Exit 0 when every unit ended
with its graphs cached, 1 when some fell back, 2 on usage errors.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from ._common import UsageError


def register(sub) -> None:
    from ._common import add_device, add_parser
    p = add_parser(sub, "warm", __doc__, help="fill the cache for a recipe of models and input shapes")
    p.add_argument("recipe", help="recipe .py (def models()), KernelBench task file or folder")
    p.add_argument("--workers", type=int, default=1,
                   help="worker processes (one per GPU by default)")
    p.add_argument("--gpus", default=None, metavar="IDS",
                   help="comma-separated GPU ids for the workers (default 0..N-1); an id given "
                        "twice runs two workers on that GPU (their timings take turns)")
    add_device(p)
    p.add_argument("--engine", default=None, help="engine (CUDAL1_ENGINE)")
    p.add_argument("--url", default=None, help="OpenAI-compatible server (CUDAL1_ENGINE_URL)")
    p.add_argument("--rounds", type=int, default=None, help="engine rounds per graph")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="any backend option, repeatable (e.g. -o baselines=eager)")
    p.add_argument("--force", action="store_true", help="re-run units already recorded as warm")
    p.add_argument("--list", action="store_true", help="list the units and exit")
    p.add_argument("--json", action="store_true", help="one JSON line per unit and a summary")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the units as Ray tasks on the cluster at ADDRESS (host:port of its "
                        "GCS; none: RAY_ADDRESS, else a local cluster)")
    from ..distributed.ray_warm import add_cli_arguments   # does not import ray
    add_cli_arguments(p)
    p.set_defaults(func=run)


def _options(args) -> dict:
    from ._common import cache_dir, resolve_options
    opts = {}
    for item in args.option:
        k, sep, v = item.partition("=")
        if not sep:
            raise UsageError(f"--option {item!r}: expected KEY=VALUE")
        opts[k.strip()] = v
    for k, v in (("cache_dir", cache_dir(args)), ("engine", args.engine), ("engine_url", args.url),
                 ("rounds", args.rounds)):
        if v is not None:
            opts[k] = v
    resolved = resolve_options(opts)          # validated here, passed on as given
    opts["cache_dir"] = resolved.cache_dir    # workers must agree on one cache dir
    return opts


def _device(args) -> str:
    from ._common import resolve_device
    return resolve_device(args.device)


# -- the journal that makes warming resumable ---------------------------------------------------
def _environment_tag(device: str) -> str:
    from ..cache.key import device_identity, numerics_flags, software_versions
    blob = json.dumps([device_identity(device), software_versions(), numerics_flags()],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _file_sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class Journal:
    """units done per (recipe, environment): {unit id: {sha, keys}}; a unit is skipped when its
    file is unchanged and all its keys are still cached."""

    def __init__(self, store, recipe: str, device: str, options: dict):
        tag = json.dumps([str(Path(recipe).resolve()), _environment_tag(device),
                          sorted((k, str(v)) for k, v in options.items())])
        self.store = store
        self.path = store.root / "warm" / (hashlib.sha256(tag.encode()).hexdigest()[:24] + ".json")
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def done(self, unit) -> bool:
        rec = self.data.get(unit.id)
        return bool(rec and rec.get("keys") and rec.get("sha") == _file_sha(unit.recipe)
                    and all(self.store.entry_path(k).is_dir() for k in rec["keys"]))

    def record(self, unit, result: dict) -> None:
        if result.get("error") or result.get("fallbacks") or not result.get("keys"):
            return
        if not all(self.store.entry_path(k).is_dir() for k in result["keys"]):
            return
        self.data[unit.id] = {"sha": _file_sha(unit.recipe), "keys": result["keys"],
                              "at": time.time()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)


# -- progress ---------------------------------------------------------------------------------
class Progress:
    """tqdm when importable and stderr is a terminal, else plain lines; a line per finished unit
    either way. While the bar is drawn, the package's log lines go through it (above the bar)
    instead of breaking it, also those of worker processes (``log_queue``)."""

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="unit", desc="warming", file=sys.stderr)
            except ImportError:
                self.bar = None
        self.total, self.n, self.quiet = total, 0, quiet
        self._handlers: list = []
        self._listener = None
        if self.bar is not None:
            self._route_logs()

    def _route_logs(self) -> None:
        import logging

        from ..log import logger
        progress = self

        class ThroughBar(logging.Handler):
            def emit(self, record):
                try:
                    progress.line(self.format(record))
                except Exception:  # noqa: BLE001 - logging must never break warming
                    self.handleError(record)
        handler = ThroughBar()
        handler.setFormatter(logging.Formatter("[cudal1] %(message)s"))
        self._handlers = list(logger.handlers)
        for h in self._handlers:
            logger.removeHandler(h)
        logger.addHandler(handler)
        self._through = handler

    def log_queue(self, ctx):
        """A queue for worker processes' log records (``_init_worker`` installs a handler that
        feeds it); None without a bar."""
        if self.bar is None:
            return None
        import logging.handlers
        q = ctx.Queue()
        self._listener = logging.handlers.QueueListener(q, self._through)
        self._listener.start()
        return q

    def line(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        elif not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def step(self, text: str) -> None:
        self.n += 1
        self.line(f"[{self.n}/{self.total}] {text}")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
        if self.bar is not None:
            self.bar.close()
            from ..log import logger
            logger.removeHandler(self._through)
            for h in self._handlers:
                logger.addHandler(h)


def _describe(result: dict) -> str:
    if result.get("error"):
        return f"{result['unit']}: FAILED {result['error']}"
    return (f"{result['unit']}: {len(result['keys'])} graphs, {result['hits']} cached, "
            f"{result['searches']} searched, {result['fallbacks']} fell back, {result['seconds']:.1f} s")


# -- workers ----------------------------------------------------------------------------------
def _init_worker(gpu_ids, device: str, log_queue=None) -> None:
    """Pin each worker process to one GPU before CUDA is initialised in it, and to the host
    CPUs of its plan (its GPU's timing core while it times, the shared work cores otherwise).
    With ``log_queue`` the package's log records go to the parent (which prints them above its
    progress bar)."""
    if log_queue is not None:
        import logging.handlers

        from ..log import logger
        logger.addHandler(logging.handlers.QueueHandler(log_queue))
        logger.propagate = False
    if device.startswith("cuda"):
        gpu, timing, work = gpu_ids.get()
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        if timing:
            os.environ["CUDAL1_TIMING_CPUS"] = timing
            os.environ["CUDAL1_WORK_CPUS"] = work
            from ..bench.timing_cpus import apply_work_cpus
            apply_work_cpus()


def cpu_plan(gpus: list[str]) -> dict[str, tuple[str, str]]:
    """GPU -> (timing CPUs, work CPUs): one physical core per distinct GPU for its timings, the
    rest for every worker's builds. Empty when the user set the CPUs or the host is too small."""
    from ..bench.timing_cpus import fmt, plan
    from ..options import env
    if env("CUDAL1_TIMING_CPUS") or env("CUDAL1_WORK_CPUS"):
        return {}
    distinct = list(dict.fromkeys(gpus))
    try:
        timing, work = plan(len(distinct))
    except ValueError:
        return {}
    return {g: (fmt(t), fmt(work)) for g, t in zip(distinct, timing)}


def _safe_warm(unit, options: dict, device: str) -> dict:
    from ..warm import warm_unit
    try:
        return warm_unit(unit, options, device)
    except Exception as e:  # noqa: BLE001 - reported per unit; the other units go on
        return {"unit": unit.description, "id": unit.id, "keys": [], "hits": 0, "misses": 0,
                "searches": 0, "fallbacks": 0, "seconds": 0.0,
                "error": f"{type(e).__name__}: {str(e)[:300]}"}


def run_units(units: list, options: dict, device: str, workers: int, gpus: list[str],
              on_result, progress=None) -> None:
    if workers <= 1:
        for u in units:
            on_result(u, _safe_warm(u, options, device))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ctx = mp.get_context("spawn")
    logs = progress.log_queue(ctx) if progress is not None else None
    ids = ctx.Queue()
    cpus = cpu_plan(gpus[:workers]) if device.startswith("cuda") else {}
    for g in gpus[:workers]:
        ids.put((g, *cpus.get(g, ("", ""))))
    # Inside a worker "cuda" means its one visible GPU.
    dev = "cuda" if device.startswith("cuda") else device
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(ids, device, logs)) as pool:
        futures = {pool.submit(_safe_warm, u, options, dev): u for u in units}
        for f in as_completed(futures):
            on_result(futures[f], f.result())


def run(args) -> int:
    from ..log import configure
    from ..options import Options
    from ..warm import list_units

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    options = _options(args)
    device = _device(args)
    try:
        units = list_units(args.recipe)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None
    if args.list:
        for u in units:
            print(u.description)
        return 0
    opts = Options.resolve(options)
    configure(opts.log_level)
    from ._common import writable_store
    store = writable_store(opts)
    journal = Journal(store, args.recipe, device, options)
    todo = [u for u in units if args.force or not journal.done(u)]
    if args.ray is not None:
        from ..distributed import ray_warm
        try:
            results = ray_warm.run_cli(args, options, device, units=todo)
        except ray_warm.RayWarmError as e:
            raise UsageError(str(e)) from None
        for unit, result in zip(todo, results):
            if not result.get("error"):
                journal.record(unit, result)
        print(json.dumps({"units": len(results), "skipped": len(units) - len(todo),
                          "failed": sum(1 for r in results if r.get("error"))}))
        return 0 if not any(r.get("error") or r.get("fallbacks") for r in results) else 1
    gpus = [g.strip() for g in args.gpus.split(",")] if args.gpus else [str(i) for i in range(args.workers)]
    if len(gpus) < args.workers:
        raise UsageError(f"--gpus names {len(gpus)} GPUs for {args.workers} workers")
    progress = Progress(len(units), quiet=args.json)
    for u in units:
        if u not in todo:
            progress.step(f"{u.description}: already warm, skipped")
            if args.json:
                print(json.dumps({"unit": u.description, "skipped": True}), flush=True)
    t0 = time.monotonic()
    results = []

    def on_result(unit, result: dict) -> None:
        journal.record(unit, result)
        results.append(result)
        progress.step(_describe(result))
        if args.json:
            print(json.dumps(result, default=str), flush=True)

    try:
        run_units(todo, options, device, args.workers, gpus, on_result, progress)
    finally:
        progress.close()
    bad = [r for r in results if r.get("error") or r.get("fallbacks")]
    summary = {"units": len(units), "skipped": len(units) - len(todo), "run": len(results),
               "searches": sum(r.get("searches", 0) for r in results),
               "failed": len(bad), "seconds": round(time.monotonic() - t0, 2),
               "cache_dir": str(store.root)}
    if args.json:
        print(json.dumps(dict(summary, summary=True)), flush=True)
    else:
        print(f"warm: {summary['units']} units, {summary['skipped']} already warm, "
              f"{summary['run']} run ({summary['searches']} searches), {summary['failed']} failed, "
              f"{summary['seconds']:.1f} s; cache {store.root}")
    return 1 if bad else 0
