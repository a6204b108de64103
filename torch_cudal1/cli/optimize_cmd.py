"""``cudal1 optimize TASK.py``: search one KernelBench-format task, cache and report the winner.

Progress goes to stderr; the result (and with ``--json`` a final JSON line) to stdout. Exit code 0
when the search completed (or the cache answered), 1 when it did not (engine failed mid-search:
the best verified implementation found is reported but not cached; or no baseline verified), 2 on
usage errors.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ._common import UsageError


def register(sub) -> None:
    from ..engines.registry import names as engine_names
    from ._common import add_device, add_parser
    p = add_parser(sub, "optimize", __doc__, help="search, verify and cache the fastest "
                                                  "implementation of a KernelBench-format task file")
    p.add_argument("task", help="task file (class Model, get_inputs, get_init_inputs)")
    add_device(p)
    p.add_argument("--engine", choices=engine_names(), default=None,
                   help="default: CUDAL1_ENGINE or builtin")
    p.add_argument("--url", default=None, help="OpenAI-compatible server URL (CUDAL1_ENGINE_URL)")
    p.add_argument("--model", default=None, help="model name (CUDAL1_MODEL)")
    p.add_argument("--rounds", type=int, default=None, help="engine rounds after the baselines")
    p.add_argument("--samples", type=int, default=None, help="candidates per round")
    p.add_argument("--report", default=None, metavar="FILE", help="write a markdown report here")
    p.add_argument("--json", action="store_true", help="end with one line of JSON")
    p.add_argument("--replay-file", default=None, metavar="FILE",
                   help="transcript for --engine replay")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="append every engine request/answer to this replay transcript")
    p.add_argument("--baselines", default=None, metavar="NAMES",
                   help="comma-separated baselines (default eager,inductor)")
    p.add_argument("--time-budget", type=float, default=None, metavar="S",
                   help="wall-clock budget of the search in seconds")
    p.set_defaults(func=run)


def _options(args):
    from ._common import resolve_options
    return resolve_options({"engine": args.engine, "engine_url": args.url, "model": args.model,
                            "rounds": args.rounds, "samples": args.samples,
                            "replay_file": args.replay_file, "record_file": args.record,
                            "baselines": args.baselines, "time_budget_s": args.time_budget},
                           args)


def _print_result(summary: dict, *, cache_hit: bool, as_json: bool, extra: dict) -> None:
    s = summary
    head = "cache hit: " if cache_hit else ""
    parts = [f"{head}winner {s.get('winner_origin')}"]
    if s.get("winner_ms") is not None:
        parts.append(f"{s['winner_ms']:.4f} ms")
    for label, k in (("eager", "speedup_vs_eager"), ("inductor", "speedup_vs_inductor")):
        if s.get(k):
            parts.append(f"x{s[k]:.2f} over {label}")
    print(", ".join(parts), flush=True)
    if as_json:
        print(json.dumps(dict(s, cache_hit=cache_hit, **extra), default=str), flush=True)


def _write_report(path, task, device, summary, attempts, cache_hit) -> None:
    from ..report import render
    Path(path).write_text(render(task.name, device, summary, attempts, cache_hit=cache_hit))


def run(args) -> int:
    from ..cache.key import task_key
    from ..cache.tiered import store_for
    from ..contracts import Attempt
    from ..log import configure
    from ..search import SearchError
    from ..search.transaction import HIT, STORED, search_and_store
    from ..task import Task
    from ._common import resolve_device

    opts = _options(args)
    configure(opts.log_level)
    path = Path(args.task)
    if not path.is_file():
        raise UsageError(f"task file {path} does not exist")
    device = resolve_device(args.device)
    task = Task.from_file(path)
    try:
        key, fields = task_key(task, device, opts.tf32)
    except Exception as e:  # noqa: BLE001 - the user's task file itself is broken
        raise UsageError(f"cannot load task {path}: {type(e).__name__}: {e}") from None
    store = store_for(opts)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        done = search_and_store(store, key, fields, task, opts, device,
                                check=lambda e: _checked(store, e, task, device, opts),
                                progress=progress)
    except SearchError as e:
        print(f"cudal1: search failed: {e}", file=sys.stderr)
        return 1
    if done.status == HIT:
        entry = done.entry
        summary = dict(entry.meta.get("summary") or {}, key=key)
        summary.setdefault("winner_origin", entry.winner_origin)
        print(f"cache hit: {key} ({entry.path}); no search run", file=sys.stderr, flush=True)
        if args.report:
            attempts = [Attempt.from_json(a) for a in entry.meta.get("attempts", [])]
            _write_report(args.report, task, device, summary, attempts, True)
        _print_result(summary, cache_hit=True, as_json=args.json, extra={"cached": True})
        return 0
    result, cached = done.result, done.status == STORED
    if cached:
        print(f"cached as {key} in {store.root}", file=sys.stderr, flush=True)
    else:
        # A search cut short by the engine is not the answer for this key: report the best
        # verified implementation found, but leave the cache empty so a later run retries.
        print(f"cudal1: search incomplete ({result.stop_reason}); best verified result "
              f"reported, nothing cached", file=sys.stderr, flush=True)
    if args.report:
        _write_report(args.report, task, device, result.summary(), result.attempts, False)
    _print_result(result.summary(), cache_hit=False, as_json=args.json, extra={"cached": cached})
    return 0 if cached else 1


def _checked(store, entry, task, device: str, opts):
    """``entry``, or None when it came from another machine and its winner fails verification
    against the user's own task here (cache/foreign.py; the task file is the trusted reference)."""
    from ..cache import foreign
    if entry is None or not foreign.needs_check(store, entry):
        return entry
    from ..contracts import Candidate
    from ..origin import Origin
    from ..verify import evaluate
    verdict, _ = evaluate(task, Candidate(entry.winner_source, origin=Origin("cache", entry.key)),
                          device=device, trials=1, time_it=False,
                          timeout_s=opts.verify_timeout_s)
    if not verdict.accepted:
        foreign.refuse(store, entry, f"its winner fails verification against this task "
                                     f"({verdict.reason}: {verdict.detail[:200]})")
        return None
    foreign.mark(store, entry, device, "task verification")
    return entry
