"""Settings of the backend: defaults, ``CUDAL1_*`` environment variables, and ``options={...}``.

Options passed to ``torch.compile`` win over the environment, which wins over the defaults. Every
option's variable is ``CUDAL1_`` and its name in upper case. The options are grouped by what they
decide (``GROUPS``, the sections of docs/options.md, where each is explained):

* ``serving``: where entries live and what runs on a miss;
* ``search``: the search's budget;
* ``families``: the built-in engine's candidate families (GPU);
* ``arbiter``: what is served, timed in the user's process (GPU);
* ``engines``: which engine proposes candidates, and how the LLM engines reach their model;
* ``remote``: the shared cache tier;
* ``diagnostics``: logs, progress, what is kept for inspection.

Settings of the verifier's and the timing's processes rather than of one model are read from the
environment only, and only here: ``env(name)`` (``ENV_ONLY`` lists them). No other module reads a
``CUDAL1_*`` variable.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("search", "cache-only", "async")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FALLBACKS = ("eager", "inductor")
NEW_SHAPES = ("background", "search", "generic")
COMPLETION_MODES = ("chat", "completion")
SWITCHES = ("auto", "on", "off")
GROUPS = ("serving", "search", "families", "arbiter", "engines", "remote", "diagnostics")


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_cudal1")


# -- environment-only settings ----------------------------------------------------------------
# name -> (default, meaning). docs/options.md ("Harness settings") explains each.
ENV_ONLY = {
    "CUDAL1_SANDBOX": ("auto", "OS sandbox of processes running candidate code: auto | bwrap | none"),
    "CUDAL1_BWRAP": (None, "the bubblewrap executable (default: bwrap on PATH)"),
    "CUDAL1_AUDIT": ("1", "0: no audit hook in the verifier's worker"),
    "CUDAL1_DEVICE_LOCK": ("1", "0: timings of processes sharing a GPU may overlap"),
    "CUDAL1_DEVICE_LOCK_DIR": (None, "where the per-GPU lock files live"),
    "CUDAL1_VERIFY_FORKSERVER": ("auto", "verifier children forked from a template: auto | 1 | 0"),
    "CUDAL1_VERIFY_FORKSERVER_IDLE_S": ("120", "an idle template exits after this many seconds"),
    "CUDAL1_VERIFY_MEMORY_MB": (None, "the verifier child's address-space limit"),
    "CUDAL1_VERIFY_KEEP_BYTES": (None, "the judge's budget for reference outputs, in bytes"),
    "CUDAL1_VERIFY_HELD_BYTES": (str(256 << 20), "the most bytes of a candidate's outputs its "
                                 "worker holds across calls (default 256 MiB)"),
    "CUDAL1_TIMING_CPUS": (None, "host CPUs a timing moves its thread to"),
    "CUDAL1_WORK_CPUS": (None, "CPUs builds and checks are restricted to"),
    "CUDAL1_NATIVE": ("auto", "native timing helpers: auto (a prior build) | 1 (build) | 0"),
    "CUDAL1_BUILD_CACHE_DIR": (None, "where candidates' builds and compiler caches live"),
}
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def env(name: str, environ=None) -> str | None:
    """The environment-only setting ``name`` (a key of ``ENV_ONLY``): its variable's value, or
    its default where the variable is unset or empty."""
    try:
        default = ENV_ONLY[name][0]
    except KeyError:
        raise KeyError(f"{name} is not a CUDAL1_* setting (options.ENV_ONLY)") from None
    value = (os.environ if environ is None else environ).get(name)
    return default if value is None or value == "" else value


def env_off(name: str, environ=None) -> bool:
    """The setting says off (``0``, ``false``, ``no``, ``off``)."""
    return str(env(name, environ)).strip().lower() in _OFF


def env_on(name: str, environ=None) -> bool:
    """The setting says on (``1``, ``true``, ``yes``, ``on``)."""
    return str(env(name, environ)).strip().lower() in _ON


def build_cache_dir() -> str:
    """Where candidates' extension builds and their private compiler caches live."""
    return env("CUDAL1_BUILD_CACHE_DIR") or os.path.join(default_cache_dir(), "build")


# (option, lowest value, whether the lowest value itself is allowed)
_RANGES = (("rounds", 0, True), ("foreground_budget_s", 0, True), ("samples", 1, True), ("time_budget_s", 0, False),
           ("early_stop", 0, True), ("verify_timeout_s", 0, False), ("trials", 1, True),
           ("capture_limit_mb", 0, True), ("parallel_builds", 1, True),
           ("lock_timeout_s", 0, True), ("request_timeout_s", 0, False),
           ("connect_timeout_s", 0, False), ("retries", 0, True), ("max_tokens", 1, True),
           ("temperature", 0, True), ("concurrency", 1, True), ("gpu_memory_utilization", 0, False),
           ("remote_timeout_s", 0, False))


class OptionError(ValueError):
    """A bad option value (from ``options={...}``, a ``CUDAL1_*`` variable or a command's flag)."""


def auto_on_gpu(setting: str, device: str, applies: bool = True) -> bool:
    """An ``auto | on | off`` option: ``auto`` is on on a GPU where what it is for ``applies``."""
    if setting == "auto":
        return str(device).startswith("cuda") and applies
    return setting == "on"


def _opt(group: str, default=None, *, factory=None, secret: bool = False):
    meta = {"group": group, "secret": secret}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Options:
    """Every option of the backend, one flat namespace (``options={...}`` keys and ``CUDAL1_*``
    names are the field names), in groups (``group_of``). One line each here; docs/options.md
    explains them."""
    # -- serving: where entries live and what runs on a miss ------------------------------------
    cache_dir: str = _opt("serving", factory=default_cache_dir)
    mode: str = _opt("serving", "search")            # search | cache-only | async
    fallback: str = _opt("serving", "eager")         # what runs a graph without a winner: eager | inductor
    new_shapes: str = _opt("serving", "background")  # an uncached size of a multi-size graph: background | search | generic
    generic: str = _opt("serving", "inductor")       # what serves sizes not searched yet: inductor | eager
    strict: bool = _opt("serving", False)            # raise instead of falling back
    training: str = _opt("serving", "inductor")      # graphs that need autograd: inductor | eager
    foreground_budget_s: float = _opt("serving", 300.0)  # searching inside one process's calls; past it misses are searched in the background
    lock_timeout_s: float = _opt("serving", 1800.0)  # wait for another process searching the key, then fall back
    trust_cache_dir: bool = _opt("serving", False)   # load code from a cache dir not owned by this user
    serve_check: str = _opt("serving", "first")     # served winners against the graph itself: first | off | N (the first call and ~1 in N)
    # -- search: its budget ----------------------------------------------------------------------
    baselines: str = _opt("search", "eager,inductor")  # comma-separated baselines timed first
    rounds: int = _opt("search", 2)                  # engine rounds after the baselines
    samples: int = _opt("search", 2)                 # candidates asked for per round
    early_stop: int = _opt("search", 2)              # stop after this many rounds without improvement
    time_budget_s: float = _opt("search", 600.0)     # wall-clock budget of one graph's search
    verify_timeout_s: float = _opt("search", 300.0)  # one candidate's child (build + checks + timing)
    trials: int = _opt("search", 3)                  # fresh input draws in verification
    parallel_builds: int = _opt("search", factory=lambda: max(1, min(8, (os.cpu_count() or 2) // 2)))
    pipeline: bool = _opt("search", False)           # on a GPU, parallel_builds whole verifications (timing included) at once
    # -- families: the built-in engine's candidate families, auto | on | off (auto: GPU, where the
    #    graph has what the family is for) -------------------------------------------------------
    tf32: str = _opt("families", "auto")             # float32 products on TF32 tensor cores (follows the user's precision; part of the key)
    max_autotune: str = _opt("families", "auto")     # the reference through inductor max-autotune
    cudnn_benchmark: str = _opt("families", "auto")  # cuDNN's algorithm autotuning for the candidate's calls
    channels_last: str = _opt("families", "auto")    # parameters and inputs in the channels-last layout
    aoti: str = _opt("families", "off")              # AOTInductor candidates
    # -- arbiter: what is served, timed in the user's process, auto | on | off (auto: GPU) --------
    arbitrate: str = _opt("arbiter", "auto")         # the winner against the user's graph (eager, inductor)
    arbitrate_cudagraph: str = _opt("arbiter", "auto")     # ... and inductor's code replayed as a CUDA graph
    arbitrate_max_autotune: str = _opt("arbiter", "auto")  # ... and inductor max-autotune on the user's graph
    pair_reference: str = _opt("arbiter", "auto")    # eager timed in each candidate's own child too
    # -- engines: who proposes candidates, and how the LLM engines reach their model ---------------
    engine: str = _opt("engines", "builtin")         # a name of engines/registry.py
    engine_url: str | None = _opt("engines")         # OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    model: str | None = _opt("engines")              # model name for the openai / vllm engines
    api_key: str | None = _opt("engines", secret=True,   # bearer token; default OPENAI_API_KEY
                               factory=lambda: os.environ.get("OPENAI_API_KEY") or None)
    request_timeout_s: float = _opt("engines", 600.0)  # read timeout of one completion request
    connect_timeout_s: float = _opt("engines", 10.0)   # connect timeout (and readiness probe)
    retries: int = _opt("engines", 3)                # on connection errors, 429 and 5xx (with backoff)
    max_tokens: int = _opt("engines", 8192)          # completion length limit
    temperature: float = _opt("engines", 0.7)        # sampling temperature (samples of one round must differ)
    concurrency: int = _opt("engines", 4)            # requests in flight when n is sent as separate requests
    completion_mode: str = _opt("engines", "chat")   # chat | completion (raw template)
    prompt_template: str | None = _opt("engines")    # raw template for completion mode
    gpu_memory_utilization: float = _opt("engines", 0.5)  # in-process vLLM: its share of GPU memory
    replay_file: str | None = _opt("engines")        # transcript (jsonl) for the replay engine
    record_file: str | None = _opt("engines")        # record every request/answer as a replay transcript
    # -- remote: the shared cache tier ----------------------------------------------------------
    remote_cache: str | None = _opt("remote", secret=True)   # redis://... (may hold a password)
    remote_timeout_s: float = _opt("remote", 5.0)    # timeout of one remote-cache operation
    remote_secret: str | None = _opt("remote", secret=True)  # signs uploads; unsigned entries refused
    # -- diagnostics -------------------------------------------------------------------------------
    log_level: str = _opt("diagnostics", "INFO")     # DEBUG | INFO | WARNING | ERROR
    progress: bool = _opt("diagnostics", True)       # one line per candidate on stderr
    capture_limit_mb: float = _opt("diagnostics", 64.0)  # larger real inputs are not kept as test vectors
    keep_workdirs: str | None = _opt("diagnostics")  # keep each search's verification work dirs under this folder

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def group_of(cls, name: str) -> str:
        return next(f.metadata["group"] for f in dataclasses.fields(cls) if f.name == name)

    @classmethod
    def groups(cls) -> dict[str, list[str]]:
        """{group: [option names]}, in ``GROUPS`` order."""
        out: dict = {g: [] for g in GROUPS}
        for f in dataclasses.fields(cls):
            out[f.metadata["group"]].append(f.name)
        return out

    @classmethod
    def secret_keys(cls) -> list[str]:
        """Options that must never be written to disk (tokens, keys, URLs that may hold a
        password): a child process gets them in its environment instead."""
        return [f.name for f in dataclasses.fields(cls) if f.metadata.get("secret")]

    def secret_env(self) -> dict:
        """The secret options that are set, as the ``CUDAL1_*`` variables of a child process."""
        return {f"CUDAL1_{k.upper()}": str(getattr(self, k)) for k in self.secret_keys()
                if getattr(self, k, None)}

    @classmethod
    def secrets_in(cls, environ) -> dict:
        """The ``CUDAL1_*`` variables of secret options set in ``environ`` (what a child that
        reads its other options from a file takes from its environment)."""
        names = [f"CUDAL1_{k.upper()}" for k in cls.secret_keys()]
        return {n: environ[n] for n in names if environ.get(n)}

    @classmethod
    def resolve(cls, options: dict | None = None, env: dict | None = None) -> "Options":
        """Defaults < ``CUDAL1_<KEY>`` environment variables < ``options``. A bad value raises
        OptionError (a ValueError) naming where it came from."""
        env = os.environ if env is None else env
        values: dict = {}
        sources: dict = {}
        for f in dataclasses.fields(cls):
            raw = env.get("CUDAL1_" + f.name.upper())
            if raw is not None and raw != "":
                sources[f.name] = "CUDAL1_" + f.name.upper()
                values[f.name] = _coerce(f, raw, source=sources[f.name])
        for k, v in (options or {}).items():
            name = k.replace("-", "_")
            if name not in cls.keys():
                raise OptionError(
                    f"unknown torch_cudal1 option {k!r}; valid options: {', '.join(cls.keys())}")
            f = next(x for x in dataclasses.fields(cls) if x.name == name)
            sources[name] = f"options[{k!r}]"
            values[name] = _coerce(f, v, source=sources[name])
        opts = cls(**values)
        opts.validate(sources)
        return opts

    def validate(self, sources: dict | None = None) -> None:
        """Every value in its range; OptionError names the first bad one and where it was set."""
        sources = sources or {}

        def bad(name: str, expected: str):
            where = sources.get(name, f"option {name}")
            return OptionError(f"torch_cudal1: {where}={getattr(self, name)!r}: expected {expected}")

        from .engines.registry import names as engines
        for name, allowed in (("mode", MODES), ("fallback", FALLBACKS), ("training", FALLBACKS),
                              ("engine", engines()), ("completion_mode", COMPLETION_MODES),
                              ("new_shapes", NEW_SHAPES), ("generic", FALLBACKS)):
            if getattr(self, name) not in allowed:
                raise bad(name, "one of " + ", ".join(allowed))
        # a boolean (the type this option had before it took auto|on|off) still reads as on / off
        flag = str(self.arbitrate_cudagraph).strip().lower()
        self.arbitrate_cudagraph = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off",
                                    "no": "off"}.get(flag, flag)
        for name in self.groups()["families"] + self.groups()["arbiter"]:
            if getattr(self, name) not in SWITCHES:
                raise bad(name, "one of auto, on, off")
        self.serve_check = str(self.serve_check).strip().lower()
        if self.serve_check not in ("first", "off") and not (
                self.serve_check.isdigit() and int(self.serve_check) >= 1):
            raise bad("serve_check", "first, off, or a whole number N >= 1 (about one call in N)")
        if str(self.log_level).upper() not in LOG_LEVELS:
            raise bad("log_level", "one of " + ", ".join(LOG_LEVELS))
        self.log_level = str(self.log_level).upper()
        from .engines.baselines import BASELINES
        names = self.baseline_names()
        unknown = [b for b in names if b not in BASELINES]
        if unknown or not names:
            raise bad("baselines", "a comma-separated list of " + ", ".join(BASELINES))
        for name, low, inclusive in _RANGES:
            value = getattr(self, name)
            if value != value or value < low or (value == low and not inclusive):   # NaN too
                raise bad(name, f"a number {'>=' if inclusive else '>'} {low}")
        if self.gpu_memory_utilization > 1:
            raise bad("gpu_memory_utilization", "a fraction in (0, 1]")

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser()

    def verify_precision(self) -> str:
        """The float32 precision candidates are verified at: the user's
        (``torch.get_float32_matmul_precision()``), or at least ``"high"`` where ``tf32="on"``
        opts in to TF32."""
        import torch
        user = torch.get_float32_matmul_precision()
        if self.tf32 == "on" and user == "highest":
            return "high"
        if self.tf32 == "off":
            return "highest"
        return user

    def serve_check_every(self) -> int:
        """About one served call in this many is checked after the first (0: the first only)."""
        return int(self.serve_check) if self.serve_check.isdigit() else 0

    def pairs_reference(self, device: str) -> bool:
        return auto_on_gpu(self.pair_reference, device)

    def baseline_names(self) -> list[str]:
        return [b.strip() for b in self.baselines.split(",") if b.strip()]


def _coerce(f: dataclasses.Field, value, source: str):
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if kind == "bool":
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        return None if value is None else str(value)
    except (TypeError, ValueError):
        raise OptionError(f"torch_cudal1: {source}={value!r} is not a valid {kind}") from None
