"""``cudal1 cache ls | show KEY | rm KEY.. | prune | verify | export FILE | import FILE | explain``

Inspect and manage the cache directory. Exit codes: 0 ok, 1 a negative result (an entry failed
verification, an import rejected an entry), 2 usage errors (unknown key, bad arguments).
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

from ._common import UsageError


def register(sub) -> None:
    from ._common import COMMON, add_device, add_parser
    p = add_parser(sub, "cache", __doc__, help="inspect and manage the cache (ls, show, rm, prune, "
                                               "verify, export, import, explain)")
    cs = p.add_subparsers(dest="cache_command", metavar="ACTION")

    def action(name: str, help: str):
        return cs.add_parser(name, parents=[COMMON], help=help, description=help)

    q = action("ls", "list entries, with each one's state (ok, tampered, unchecked from another "
                     "machine) and whether it fits this machine")
    q.add_argument("--json", action="store_true", help="one JSON list of rows")
    q.set_defaults(func=cmd_ls)

    q = action("show", "one entry's metadata (a tampered entry is quarantined)")
    q.add_argument("key", help="key or unique key prefix")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.add_argument("--attempts", action="store_true", help="include every attempt")
    q.set_defaults(func=cmd_show)

    q = action("rm", "remove entries")
    q.add_argument("keys", nargs="+", metavar="KEY", help="keys or unique key prefixes")
    q.set_defaults(func=cmd_rm)

    q = action("prune", "remove old entries, leftovers of dead writers, old jobs, quarantine")
    q.add_argument("--older-than", default=None, metavar="D",
                   help="entries not used for this long (e.g. 30d, 12h, 90m, 3600)")
    q.add_argument("--max-size", default=None, metavar="S",
                   help="then remove least recently used entries until the cache fits (e.g. 5G, 500M)")
    q.add_argument("--dry-run", action="store_true",
                   help="list what would be removed (entries, staging dirs, jobs, quarantine), "
                        "remove nothing")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.set_defaults(func=cmd_prune)

    q = action("verify", "re-verify entries on this machine (winner + test vectors)")
    q.add_argument("keys", nargs="*", metavar="KEY", help="default: every entry that fits here")
    add_device(q)
    q.add_argument("--trials", type=int, default=2, help="fresh input draws (default 2)")
    q.add_argument("--timeout", type=float, default=600.0,
                   help="seconds one entry's checks may take (default 600)")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.set_defaults(func=cmd_verify)

    q = action("export", "write entries into a bundle (tar.gz)")
    q.add_argument("file", help="bundle to write")
    q.add_argument("keys", nargs="*", metavar="KEY", help="default: all entries")
    q.set_defaults(func=cmd_export)

    q = action("import", "check and import a bundle; report what fits this machine")
    q.add_argument("file", help="bundle to read")
    add_device(q)
    q.add_argument("--replace", action="store_true", help="replace entries that exist")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.set_defaults(func=cmd_import)

    q = action("explain", "which keys a model or task asks for and why near entries do not "
                          "match (reads the local cache only)")
    q.add_argument("target", help="recipe .py (def models()), KernelBench task file or folder")
    q.add_argument("--model", default=None, help="only this recipe model")
    q.add_argument("--set", type=int, default=None, dest="index", metavar="N",
                   help="only this input set")
    add_device(q)
    q.add_argument("--json", action="store_true", help="one JSON list of records")
    q.set_defaults(func=cmd_explain)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


# -- helpers ----------------------------------------------------------------------------------
def _store(args):
    """The local cache dir (inspecting never reaches the remote tier)."""
    from ..cache.store import CacheStore
    from ._common import resolve_options
    return CacheStore(resolve_options(args=args).cache_path)


def _resolve_key(store, key: str) -> str:
    from ..cache import failures
    keys = sorted(set(store.keys()) | set(failures.keys(store)))
    if key in keys:
        return key
    match = [k for k in keys if k.startswith(key)] if key else []
    if len(match) == 1:
        return match[0]
    if not match:
        raise UsageError(f"no cache entry {key!r} in {store.root}")
    raise UsageError(f"key prefix {key!r} is ambiguous ({len(match)} entries)")


def _device(name: str | None) -> str:
    from ._common import resolve_device
    return resolve_device(name)


def _here_fields(device: str) -> dict:
    from ..cache.key import key_fields
    return key_fields("", [], device)


def _fits(fields: dict, here: dict) -> list:
    from ..cache.explain import fit
    return fit(here, fields or {})


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not m:
        raise UsageError(f"bad duration {text!r} (e.g. 30d, 12h, 90m, 3600)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", (text or "").lower())
    if not m:
        raise UsageError(f"bad size {text!r} (e.g. 5G, 500M, 1048576)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def _state(store, key: str, meta: dict) -> str:
    """What serving would make of the entry: ok, tampered (quarantined when loaded), or from
    another machine and not yet checked here (checked on first use)."""
    problem = store.problem(key)
    if problem is not None:
        return f"tampered: {problem}"
    from ..cache import foreign
    from ..cache.store import CacheEntry
    entry = CacheEntry(key, store.entry_path(key), meta)
    if foreign.needs_check(store, entry):
        return f"unchecked: from {entry.foreign.get('via', 'bundle')} {entry.foreign.get('from', '?')}"
    return "ok"


def _row(store, key: str, here: dict) -> dict:
    meta = store.read_meta(key) or {}
    w = meta.get("winner") or {}
    fields = meta.get("fields") or {}
    misfit = _fits(fields, here)
    return {"key": key, "status": _state(store, key, meta), "task": meta.get("task_name"),
            "graph": str(fields.get("graph", ""))[:16],
            "device": (fields.get("device") or {}).get("name"), "winner": w.get("origin"),
            "speedup_vs_eager": w.get("speedup_vs_eager"),
            "speedup_vs_inductor": w.get("speedup_vs_inductor"),
            "size": store.size(key), "created": meta.get("created"),
            "last_used": store.last_used(key), "fits_here": not misfit,
            "imported": bool(meta.get("imported")), "readable": bool(meta)}


# -- subcommands --------------------------------------------------------------------------------
def cmd_ls(args) -> int:
    store = _store(args)
    here = _here_fields("cuda" if _cuda() else "cpu")
    rows = [_row(store, k, here) for k in store.keys()]
    from ..cache import failures
    failed = [{"key": k, **(failures.known(store, k) or {})} for k in failures.keys(store)]
    failed = [f for f in failed if "why" in f]
    if args.json:
        # a failed search's row has an entry row's fields, with no entry behind them
        print(json.dumps(rows + [{"key": f["key"], "status": f"failed: at {f['stage']}: {f['why']}",
                                  "task": None, "graph": "", "device": None, "winner": None,
                                  "speedup_vs_eager": None, "speedup_vs_inductor": None,
                                  "size": 0, "created": f["time"], "last_used": None,
                                  "fits_here": False, "imported": False, "readable": False}
                                 for f in failed], default=str))
        return 0
    for f in failed:
        print(f"{f['key']}  failed at {f['stage']}, not searched again (cudal1 cache rm): "
              f"{f['why'][:160]}")
    if not rows:
        print(f"(no entries in {store.root})")
        return 0
    print(f"{'KEY':32}  {'STATE':9} {'TASK':22} {'DEVICE':22} {'WINNER':28} {'xEAGER':>7} "
          f"{'SIZE':>8}  FITS")
    for r in rows:
        sp = f"{r['speedup_vs_eager']:.2f}" if r["speedup_vs_eager"] else "-"
        print(f"{r['key']:32}  {r['status'].split(':')[0]:9} {str(r['task'])[:22]:22} "
              f"{str(r['device'])[:22]:22} {str(r['winner'])[:28]:28} {sp:>7} "
              f"{_human(r['size']):>8}  {'yes' if r['fits_here'] else 'no'}")
    bad = [r for r in rows if r["status"] != "ok"]
    for r in bad:
        print(f"  {r['key']}: {r['status']}")
    print(f"{len(rows)} entries, {_human(sum(r['size'] for r in rows))} in {store.root}"
          + (f"; {sum(r['status'].startswith('tampered') for r in rows)} tampered (quarantined "
             "when loaded)" if any(r["status"].startswith("tampered") for r in rows) else ""))
    return 0


def cmd_show(args) -> int:
    store = _store(args)
    key = _resolve_key(store, args.key)
    meta = store.read_meta(key)
    entry = store.load(key, check=True)
    status = "ok" if entry is not None else "corrupt (quarantined)"
    trust = store.trust_problem(store.entry_path(key)) if entry is not None else None
    if meta is None:
        raise UsageError(f"entry {key} has no readable metadata")
    from ..cache.decisions import read_decision
    decision = read_decision(store, key)
    out = dict(meta, status=status, trusted=trust is None, trust_problem=trust, serve=decision)
    if not args.attempts:
        out["attempts"] = len(meta.get("attempts") or [])
    if args.json:
        print(json.dumps(out, default=str))
        return 0 if entry is not None else 1
    w = meta.get("winner") or {}
    s = meta.get("summary") or {}
    fields = meta.get("fields") or {}
    print(f"key        {key}   [{status}{'' if trust is None else ', untrusted: ' + trust}]")
    print(f"task       {meta.get('task_name')}   graph {fields.get('graph')}")
    print(f"inputs     " + "; ".join(_fmt_input(m) for m in fields.get("inputs", [])))
    print(f"device     {json.dumps(fields.get('device'))}")
    print(f"versions   {json.dumps(fields.get('versions'))}")
    print(f"flags      {json.dumps(fields.get('flags'))}")
    env = meta.get("environment") or {}
    print(f"made with  driver {env.get('driver')}, python {env.get('python')}, "
          f"packages {json.dumps(env.get('packages'))}")
    print(f"winner     {w.get('origin')}  {(w.get('timing') or {}).get('median_ms')} ms  "
          f"x{w.get('speedup_vs_eager')} over eager, x{w.get('speedup_vs_inductor')} over inductor")
    print(f"search     {s.get('candidates_tried')} candidates, {s.get('candidates_accepted')} "
          f"accepted, {s.get('rounds_run')} rounds, {s.get('seconds')} s ({s.get('stop_reason')})")
    if decision is not None:   # what a process serves for it (the arbiter's kept decision)
        ms = ", ".join(f"{k} {v:.4g}" for k, v in sorted((decision.get("ms") or {}).items()))
        print(f"served     {decision.get('choice')}" + (f"   (ms here: {ms})" if ms else ""))
    else:
        print("served     the winner (no arbiter decision kept)")
    print(f"created    {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(meta.get('created', 0)))}"
          + (f"   imported from {meta['imported'].get('from')}" if meta.get("imported") else ""))
    print(f"files      " + ", ".join(sorted((meta.get("manifest") or {}).keys())))
    return 0 if entry is not None else 1


def _fmt_input(m: dict) -> str:
    if "shape" in m:
        return f"{m['dtype'].replace('torch.', '')}{m['shape']}"
    return f"{m.get('scalar') or m.get('other')}={m.get('value', '')}"


def cmd_rm(args) -> int:
    store = _store(args)
    keys = [_resolve_key(store, k) for k in args.keys]
    from ..cache import failures
    for k in keys:
        if store.remove(k):
            print(f"removed {k}")
        if failures.forget(store, k):
            print(f"forgot {k}'s failed search: the next call for it searches again")
    return 0


def cmd_prune(args) -> int:
    from ..serve.worker import clean_jobs
    store = _store(args)
    older = parse_duration(args.older_than) if args.older_than else None
    max_size = parse_size(args.max_size) if args.max_size is not None else None
    now = time.time()
    keys = store.keys()
    doomed = []
    if older is not None:
        doomed = [k for k in keys if now - store.last_used(k) > older]
    if max_size is not None:
        rest = sorted((k for k in keys if k not in doomed), key=store.last_used)   # LRU first
        sizes = {k: store.size(k) for k in rest}
        total = sum(sizes.values())
        for k in rest:
            if total <= max_size:
                break
            doomed.append(k)
            total -= sizes[k]
    dry = args.dry_run
    report = {"removed": doomed, "dry_run": dry}
    if not dry:
        for k in doomed:
            store.remove(k)
    # The same lists with and without --dry-run: a dry run says what a real one removes.
    report["stale_staging"] = [p.name for p in store.clean_stale(dry_run=dry)]
    report["old_jobs"] = [p.name for p in clean_jobs(store, dry_run=dry)]
    quarantined = []
    if store.quarantine_dir.is_dir():
        import shutil
        for d in sorted(store.quarantine_dir.iterdir()):
            if not dry:
                shutil.rmtree(d, ignore_errors=True)
            quarantined.append(d.name)
    report["quarantine"] = quarantined
    if args.json:
        print(json.dumps(report))
    else:
        verb = "would remove" if dry else "removed"
        print(f"{verb} {len(doomed)} entries, {len(report['stale_staging'])} stale staging dirs, "
              f"{len(report['old_jobs'])} old jobs, {len(report['quarantine'])} quarantined "
              "entries")
        for k in doomed:
            print(f"  entry       {k}")
        for name in report["stale_staging"]:
            print(f"  staging     {name}")
        for name in report["old_jobs"]:
            print(f"  job         {name}")
        for name in report["quarantine"]:
            print(f"  quarantine  {name}")
    return 0


def _task_unbound(entry) -> str | None:
    """Why ``entry``'s task.py is not the task its key was made for, where the key says (a task
    file's key is the hash of its source); None otherwise."""
    import hashlib
    graph = str((entry.meta.get("fields") or {}).get("graph", ""))
    if not graph.startswith("src:"):
        return None
    try:
        got = hashlib.sha256((entry.path / "task.py").read_text().encode()).hexdigest()
    except OSError as e:
        return f"its task.py is unreadable ({e})"
    return None if got == graph[4:] else "its task.py is not the task its key was made for"


def _reference_of(entry) -> str:
    graph = str((entry.meta.get("fields") or {}).get("graph", ""))
    if entry.foreign is None:
        return "task.py (written here)"
    return "task.py (its key's own task file)" if graph.startswith("src:") else \
        "task.py (came with the entry)"


def cmd_verify(args) -> int:
    from ..cache.vectors import check_vectors
    from ..contracts import Candidate
    from ..origin import Origin
    from ..task import Task
    from ..verify import evaluate

    store = _store(args)
    device = _device(args.device)
    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    here = _here_fields(device)
    explicit = bool(args.keys)
    keys = [_resolve_key(store, k) for k in args.keys] if explicit else store.keys()
    results, failed = [], 0
    for key in keys:
        r = {"key": key}
        meta = store.read_meta(key) or {}
        misfit = _fits(meta.get("fields"), here)
        entry = store.load(key)
        if entry is None:
            r.update(status="failed", detail="corrupt entry (content hash mismatch); quarantined")
        elif misfit:
            from ..cache.explain import summarize
            r.update(status="skipped", detail=f"made for another environment: {summarize(misfit)}")
        elif (unbound := _task_unbound(entry)) is not None:
            r.update(status="failed", detail=unbound)
        else:
            task = Task.from_file(entry.path / "task.py")
            with tempfile.TemporaryDirectory(prefix="cudal1-cache-verify-") as wd:
                cand = Candidate(entry.winner_source, origin=Origin("cache", key))
                verdict, _ = evaluate(task, cand, device=device, trials=args.trials,
                                      timeout_s=args.timeout, time_it=False, workdir=wd)
            r["verdict"] = verdict.to_json()
            vec = check_vectors(entry.path, device, timeout_s=args.timeout,
                                inductor_cache=entry.artifacts_trusted)
            r["vectors"] = vec
            ok = verdict.accepted and vec["status"] in ("ok", "absent")
            r.update(status="ok" if ok else "failed",
                     detail=(f"winner {verdict.reason}" + (f" ({verdict.detail[:200]})" if not verdict.accepted else "")
                             + f"; vectors {vec['status']}" + (f" ({vec.get('detail', '')[:200]})"
                                                               if vec["status"] not in ("ok", "absent") else "")))
            r["reference"] = _reference_of(entry)
            if entry.foreign is not None and not str(entry.meta.get("fields", {}).get(
                    "graph", "")).startswith("src:"):
                r["detail"] += (f"; judged against the task.py that came with it from "
                                f"{entry.foreign.get('via', 'bundle')}, not your graph: serving "
                                "checks it against your graph before its first use")
        failed += r["status"] == "failed"
        results.append(r)
        if not args.json:
            print(f"{key}  {r['status']:8} {r['detail']}", flush=True)
    if args.json:
        print(json.dumps({"device": device, "results": results, "failed": failed}, default=str))
    elif not keys:
        print(f"(no entries in {store.root})")
    return 1 if failed else 0


def cmd_export(args) -> int:
    from ..cache.bundle import BundleError, export_bundle
    from ..cache.key import environment_fingerprint
    store = _store(args)
    keys = [_resolve_key(store, k) for k in args.keys] if args.keys else store.keys()
    if not keys:
        raise UsageError(f"nothing to export: no entries in {store.root}")
    try:
        export_bundle(store, keys, args.file, environment_fingerprint("cuda" if _cuda() else "cpu"),
                      secret=_secret(args))
    except BundleError as e:
        print(f"cudal1: {e}", file=sys.stderr)
        return 1
    print(f"exported {len(keys)} entries to {args.file}")
    return 0


def cmd_import(args) -> int:
    from ..cache.bundle import BundleError, import_bundle
    from ..cache.explain import summarize
    store = _store(args)
    from ..cache.store import CacheDirError
    try:
        store.ensure_writable()
    except CacheDirError as e:
        raise UsageError(str(e)) from None
    if not Path(args.file).is_file():
        raise UsageError(f"bundle {args.file!r} does not exist")
    device = _device(args.device)
    here = _here_fields(device)
    try:
        reports = import_bundle(store, args.file, replace=args.replace, secret=_secret(args))
    except BundleError as e:
        raise UsageError(str(e)) from None
    for r in reports:
        if r["status"] == "rejected":      # not in the cache: whether it would fit is moot
            r.update(fits_here=None, misfit=[], fit_detail="not imported")
            continue
        misfit = _fits(r.get("fields"), here)
        r["fits_here"] = not misfit
        r["misfit"] = [list(d) for d in misfit]
        r["fit_detail"] = ("fits this machine (checked against its test vectors on first use)"
                           if not misfit else f"does not fit: {summarize(misfit)}")
    rejected = sum(r["status"] == "rejected" for r in reports)
    if args.json:
        print(json.dumps({"entries": [{k: v for k, v in r.items() if k not in ("fields", "environment")}
                                      for r in reports], "rejected": rejected}, default=str))
    else:
        for r in reports:
            print(f"{r['key']}  {r['status']:8} {r['detail']}; {r['fit_detail']}")
        fits = sum(bool(r["fits_here"]) for r in reports if r["status"] != "rejected")
        print(f"{len(reports)} entries: {sum(r['status'] == 'imported' for r in reports)} imported, "
              f"{sum(r['status'] == 'exists' for r in reports)} already present, {rejected} rejected; "
              f"{fits} fit this machine ({device})")
    return 1 if rejected else 0


def cmd_explain(args) -> int:
    from ..cache.explain import near_entries, summarize
    from ..warm import list_units, peek_unit
    store = _store(args)
    device = _device(args.device)
    try:
        units = list_units(args.target)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None
    units = [u for u in units if (args.model is None or u.model == args.model)
             and (args.index is None or u.index == args.index)]
    if not units:
        raise UsageError("no unit matches --model/--set")
    from ..log import configure
    configure("ERROR")
    tier = _remote_tier(args)
    asked = []
    for u in units:
        for seen in peek_unit(u, {"cache_dir": str(store.root.parent)}, device):
            asked.append((u.description, seen))
        if u.kind == "task":
            asked.append((u.description + " (cudal1 optimize)", _task_key_fields(u.recipe, device)))
    out = []
    for desc, seen in asked:
        key, fields = seen["key"], seen["fields"]
        entry = store.load(key)
        rec = {"unit": desc, "key": key, "graph": fields.get("graph"), "hit": entry is not None}
        if entry is not None:
            problem = store.trust_problem(entry.path)
            rec["detail"] = "cached" + (f" but untrusted: {problem}" if problem else "")
        else:
            near = near_entries(store, fields, scan=True)
            rec["near"] = [{"key": k, "diff": [list(d) for d in diffs]} for k, diffs in near]
            rec["detail"] = (f"miss: {len(near)} entries of this graph, none matches" if near
                             else "miss: no entry for this graph")
            if tier is not None:        # asked, not fetched: explaining changes no cache
                rec["remote"] = tier.has(key)
                if rec["remote"]:
                    rec["detail"] += " here; the remote tier has it (fetched on first use)"
        out.append(rec)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    for rec in out:
        print(f"{rec['unit']}\n  key {rec['key']} (graph {str(rec['graph'])[:16]}): {rec['detail']}")
        for n in rec.get("near", [])[:5]:
            print(f"    {n['key']}: {summarize([tuple(d) for d in n['diff']], width=6)}")
    return 0


def _secret(args) -> str | None:
    """This user's ``remote_secret`` (CUDAL1_REMOTE_SECRET): bundles are signed and checked with
    it as the remote tier's entries are."""
    from ._common import resolve_options
    return resolve_options(args=args).remote_secret


def _remote_tier(args):
    """The remote tier configured for this user (CUDAL1_REMOTE_CACHE), or None."""
    from ._common import resolve_options
    opts = resolve_options(args=args)
    if not opts.remote_cache:
        return None
    from ..cache.remote import tier_for
    return tier_for(opts.remote_cache, opts.remote_timeout_s, opts.remote_secret)


def _task_key_fields(path: str, device: str) -> dict:
    from ..options import Options
    from ..task import Task
    from ..cache.key import task_key
    key, fields = task_key(Task.from_file(path), device, Options.resolve().tf32)
    return {"key": key, "fields": fields}


def _cuda() -> bool:
    import torch
    return torch.cuda.is_available()


def _human(n: int) -> str:
    for unit in ("B", "K", "M", "G"):
        if n < 1024 or unit == "G":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)
