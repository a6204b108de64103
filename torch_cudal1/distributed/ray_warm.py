"""Warming a recipe on a Ray cluster: one Ray task per (warm unit, device kind).

Each task asks for one GPU (``gpus_per_task``; CPU slots stand in for tests) and runs
``torch_cudal1.warm.warm_unit`` on whatever node Ray picks. The engine is whatever ``options`` say
(typically one OpenAI-compatible server every worker reaches), and results flow into the shared
remote cache tier: every worker gets the same ``remote_cache`` URL and uploads its entries before
its task returns. A task whose worker dies or raises is retried on another worker
(``max_retries``, ``retry_exceptions=True``). ``ray`` is imported only here, and only when used.
"""
from __future__ import annotations

import os
import socket
import sys
import time

from ..log import logger

DEFAULT_MAX_RETRIES = 3
UPLOAD_WAIT_S = 300.0     # how long a task waits for its entries to reach the remote tier


class RayWarmError(RuntimeError):
    """Ray warming cannot start (no ray package, no cluster at the address, a refused token):
    one line that says what to do."""


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RayWarmError("Ray warming needs the 'ray' package: pip install 'torch_cudal1[ray]' "
                           "(or pip install 'ray[default]')") from None
    return ray


def token_available(env=None) -> bool:
    """Whether a Ray authentication token is at hand where Ray looks for one (``RAY_AUTH_TOKEN``,
    the file ``RAY_AUTH_TOKEN_PATH``, or ``~/.ray/auth_token``)."""
    env = os.environ if env is None else env
    if env.get("RAY_AUTH_TOKEN"):
        return True
    path = env.get("RAY_AUTH_TOKEN_PATH") or os.path.join(os.path.expanduser("~"), ".ray",
                                                           "auth_token")
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def prepare_auth(address: str | None) -> str | None:
    """Joining a running cluster: clusters started by ``ray start`` (Ray 2.52 and later) ask for
    a token by default, and a driver that does not send one is refused. Unless the user chose a
    mode (``RAY_AUTH_MODE``), send the token when one is at hand. Returns the mode set, if any."""
    if address in (None, "local") or os.environ.get("RAY_AUTH_MODE") or not token_available():
        return None
    os.environ["RAY_AUTH_MODE"] = "token"
    return "token"


def _init_error(address: str | None, e: BaseException) -> RayWarmError:
    # Ray wraps the cause (ConnectionError <- RuntimeError <- AuthenticationError): read the chain.
    chain, seen = [], e
    while seen is not None and len(chain) < 10:
        chain.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(chain)
    where = f"the Ray cluster at {address}" if address else "the Ray cluster"
    if any(s in text for s in ("InvalidAuthToken", "AuthenticationError", "Unauthenticated",
                               "authentication token")):
        mode = os.environ.get("RAY_AUTH_MODE") or "disabled"
        return RayWarmError(
            f"{where} refused this client's authentication (RAY_AUTH_MODE={mode}): give it the "
            "cluster's token in RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH (`ray get-auth-token` on "
            "the head node prints it), or start the cluster with RAY_AUTH_MODE=disabled")
    return RayWarmError(f"cannot join {where}: {_last_line(e)} (is `ray start --head` running "
                        "there, and is the address host:port of its GCS?)")


def warm_task(unit, options: dict, device: str, kind: str | None) -> dict:
    """The body of one Ray task (module level, so Ray can pickle it by reference)."""
    from .. import warm
    from ..cache import remote
    started = time.time()
    result = dict(warm.warm_unit(unit, options, device))
    # The entries must be in the shared tier before the task counts as done: the worker process
    # may be reused or torn down right after.
    uploaded = remote.flush_all(UPLOAD_WAIT_S)
    result.update(node=socket.gethostname(), pid=os.getpid(), device_kind=kind,
                  uploaded=uploaded, task_seconds=time.time() - started)
    return result


def _last_line(e: BaseException) -> str:
    """The gist of a (Ray-wrapped) error: its last non-empty line, bounded."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:300]


def _describe(unit) -> str:
    return str(getattr(unit, "description", None) or unit)


def run(recipe_path: str, address: str | None = None, options: dict | None = None,
        device: str = "cuda", *, device_kinds: list[str] | None = None,
        gpus_per_task: float | None = None, cpus_per_task: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES, runtime_env: dict | None = None,
        units: list | None = None, stream=None) -> list[dict]:
    """Warm every unit of ``recipe_path`` on the Ray cluster at ``address`` (None: the cluster
    named by ``RAY_ADDRESS``, else a local one; ``"auto"``: the running local cluster).

    ``device_kinds`` (e.g. ``["H100", "A100"]``, Ray accelerator types) runs every unit once per
    kind, each on a node with that GPU; by default once, on any GPU. ``gpus_per_task`` defaults
    to 1 for a CUDA ``device`` and 0 otherwise; ``cpus_per_task`` to 1.

    ``units`` (default: all of the recipe's) lets a caller skip units it knows are warm.

    Returns one dict per (unit, kind) in recipe order: ``warm_unit``'s result plus ``ok``,
    ``node``, ``pid``, ``device_kind``, ``uploaded``; a unit that failed on every attempt has
    ``ok`` False, ``error`` and zero counts. Progress, as the local ``cudal1 warm`` prints it: a
    line per finished unit and a summary, on ``stream`` (stderr)."""
    from ..options import Options
    from ..warm import list_units
    options = dict(options or {})
    Options.resolve(options)                       # a typo fails here, not on every worker
    stream = stream or sys.stderr
    if not options.get("remote_cache") and address not in (None, "local"):
        logger.warning("Ray warming without remote_cache: results stay on each worker's local "
                       "cache dir; set remote_cache (redis://...) to share them")
    units = list_units(recipe_path) if units is None else list(units)
    kinds = list(device_kinds) if device_kinds else [None]
    gpus = (1 if str(device).startswith("cuda") else 0) if gpus_per_task is None else gpus_per_task
    cpus = 1 if cpus_per_task is None else cpus_per_task

    if address not in (None, "local"):
        prepare_auth(address)     # before ray is imported: it reads RAY_AUTH_MODE then
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        init = {"address": address} if address not in (None, "local") else {}
        try:
            ray.init(**init, runtime_env=runtime_env, log_to_driver=True)
        except Exception as e:  # noqa: BLE001 - Ray raises many kinds; one line for the user
            raise _init_error(address, e) from None
    try:
        task = ray.remote(warm_task)
        pending = {}
        for i, unit in enumerate(units):
            for kind in kinds:
                opts = dict(num_gpus=gpus, num_cpus=cpus, max_retries=max_retries,
                            retry_exceptions=True)
                if kind:
                    opts["accelerator_type"] = kind
                ref = task.options(**opts).remote(unit, options, device, kind)
                pending[ref] = (i, unit, kind)
        results: dict = {}
        total, t0 = len(pending), time.time()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i, unit, kind = pending.pop(ref)
                try:
                    res = dict(ray.get(ref), ok=True)
                except Exception as e:  # noqa: BLE001 - retries exhausted: report, keep going
                    res = {"ok": False, "id": getattr(unit, "id", None), "keys": [], "hits": 0,
                           "misses": 0, "searches": 0, "fallbacks": 0, "seconds": 0.0,
                           "device_kind": kind,
                           "error": f"{type(e).__name__}: {_last_line(e)}"}
                res["unit"] = _describe(unit)
                results[(i, kind)] = res
                print(_line(len(results), total, res), file=stream, flush=True)
        ordered = [results[(i, kind)] for i in range(len(units)) for kind in kinds]
        print(_summary(ordered, time.time() - t0), file=stream, flush=True)
        return ordered
    finally:
        if started_here:
            ray.shutdown()


def _line(done: int, total: int, res: dict) -> str:
    """The local warm's progress line, plus where the unit ran."""
    kind = f" [{res['device_kind']}]" if res.get("device_kind") else ""
    if not res.get("ok"):
        return f"[{done}/{total}] {res['unit']}{kind}: FAILED {res.get('error', '?')}"
    upload = "" if res.get("uploaded", True) else ", upload still pending"
    return (f"[{done}/{total}] {res['unit']}{kind}: {len(res.get('keys') or [])} graphs, "
            f"{res.get('hits', 0)} cached, {res.get('searches', 0)} searched, "
            f"{res.get('fallbacks', 0)} fell back, {float(res.get('seconds') or 0):.1f} s "
            f"on {res.get('node', '?')}{upload}")


def _summary(results: list[dict], seconds: float) -> str:
    ok = [r for r in results if r.get("ok")]
    failed = sum(1 for r in results if not r.get("ok") or r.get("fallbacks"))
    return (f"ray warm: {len(ok)}/{len(results)} units done on "
            f"{len({r.get('node') for r in ok})} node(s), "
            f"{sum(len(r.get('keys') or []) for r in ok)} graphs "
            f"({sum(r.get('searches', 0) for r in ok)} searches), {failed} failed, {seconds:.1f} s")


# -- the command line (``cudal1 warm RECIPE --ray [ADDRESS]``) --------------------------------------
def add_cli_arguments(parser) -> None:
    """The Ray resource flags of ``cudal1 warm`` (the ``--ray [ADDRESS]`` flag itself is there)."""
    g = parser.add_argument_group("Ray warming (with --ray)")
    g.add_argument("--ray-gpus-per-task", type=float, default=None, metavar="N",
                   help="GPUs each unit asks for (default 1 for --device cuda, 0 for cpu)")
    g.add_argument("--ray-cpus-per-task", type=float, default=None, metavar="N",
                   help="CPUs each unit asks for (default 1)")
    g.add_argument("--ray-device-kinds", default=None, metavar="KIND,...",
                   help="Ray accelerator types (e.g. H100,A100): every unit runs once per kind")
    g.add_argument("--ray-max-retries", type=int, default=DEFAULT_MAX_RETRIES, metavar="N",
                   help=f"retries of a unit whose worker died or raised (default "
                        f"{DEFAULT_MAX_RETRIES})")


def run_cli(args, options: dict, device: str, units: list | None = None) -> list[dict]:
    """``run`` with the flags of ``add_cli_arguments`` (absent flags: the defaults)."""
    kinds = getattr(args, "ray_device_kinds", None)
    return run(args.recipe, getattr(args, "ray", None) or None, options, device,
               device_kinds=[k.strip() for k in kinds.split(",") if k.strip()] if kinds else None,
               gpus_per_task=getattr(args, "ray_gpus_per_task", None),
               cpus_per_task=getattr(args, "ray_cpus_per_task", None),
               max_retries=getattr(args, "ray_max_retries", DEFAULT_MAX_RETRIES), units=units)


__all__ = ["RayWarmError", "add_cli_arguments", "prepare_auth", "run", "run_cli",
           "token_available", "warm_task"]
