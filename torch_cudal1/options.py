"""Settings of the backend: defaults, ``CUDAL1_*`` environment variables, and ``options={...}``.

Options passed to ``torch.compile`` win over the environment, which wins over the defaults.
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
ENGINES = ("builtin", "openai", "vllm", "replay")
COMPLETION_MODES = ("chat", "completion")


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_cudal1")


SECRET = {"secret": True}   # dataclass field metadata of options that never touch the disk

# (option, lowest value, whether the lowest value itself is allowed)
_RANGES = (("rounds", 0, True), ("samples", 1, True), ("time_budget_s", 0, False),
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


@dataclass
class Options:
    cache_dir: str = field(default_factory=default_cache_dir)
    engine: str = "builtin"          # builtin | openai | vllm | replay
    engine_url: str | None = None    # OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    model: str | None = None         # model name for the openai / vllm engines
    replay_file: str | None = None   # transcript (jsonl) for the replay engine
    mode: str = "search"             # search | cache-only | async
    strict: bool = False             # raise instead of falling back
    rounds: int = 2                  # engine rounds after the baselines
    samples: int = 2                 # candidates asked for per round
    time_budget_s: float = 600.0     # wall-clock budget of one graph's search
    early_stop: int = 2              # stop after this many rounds without improvement
    verify_timeout_s: float = 300.0  # one candidate's child process (build + checks + timing)
    trials: int = 3                  # fresh input draws in verification
    fallback: str = "eager"          # what runs when no verified winner is available
    new_shapes: str = "background"   # a size not cached of a graph with dynamic shapes (or of a static graph met at another size): background (serve `generic` at once; search the size in a background worker from its second call, its winner swapped in) | search (search it inside forward, as `cudal1 warm` does) | generic (serve `generic`, search nothing)
    generic: str = "inductor"        # what serves sizes not searched yet: inductor (with dynamic shapes where the graph has them: one build for every size) | eager
    training: str = "inductor"       # graphs that need autograd: inductor | eager
    baselines: str = "eager,inductor"  # comma-separated baselines measured first
    aoti: str = "off"                # built-in AOTInductor candidates: off | auto (GPU only) | on
    max_autotune: str = "auto"       # built-in candidate: the reference through inductor max-autotune (Triton GEMM/conv templates and reduction block sizes tuned on the device): auto (GPU, graphs with matrix products, convolutions or reductions, and no more distinct product/convolution shapes than verify_timeout_s can tune at ~20 s each) | on | off
    tf32: str = "auto"               # float32 matrix products on TF32 tensor cores: auto (follows the user: where torch.get_float32_matmul_precision() is "high" or "medium", built-in TF32 candidates on a GPU for graphs with float32 products, verified at that precision) | on (explicit opt-in: proposed, and verified at "high", whatever the precision setting) | off (never; part of the cache key)
    cudnn_benchmark: str = "auto"    # built-in candidates with cuDNN's autotuning (cudnn.benchmark) for their own calls: auto (GPU, graphs with convolutions) | on | off
    channels_last: str = "auto"      # built-in candidates with the module's 4-D/5-D parameters and its inputs in the channels-last layout (tensor-core convolutions read NHWC): auto (GPU, graphs with 2-D or 3-D convolutions) | on | off
    arbitrate: str = "auto"          # time the winner against the user's graph (eager, inductor) in-process: auto (GPU) | on | off
    arbitrate_max_autotune: str = "auto"  # the arbiter also times the user's graph through inductor max-autotune (and, with arbitrate_cudagraph, replayed as a CUDA graph): auto (GPU, where the search's own max-autotune attempt came within 2x of its winner and its templates run on tensor cores: bf16/fp16, or TF32 allowed) | on | off; costs its compile (2-80 s per graph on real models)
    arbitrate_cudagraph: str = "auto"  # the arbiter also times inductor's code on the user's graph replayed as a CUDA graph: auto (on a GPU) | on (the same; kept for scripts) | off
    pair_reference: str = "auto"     # time the reference right after each candidate in the candidate's own verifier child, for speedups over eager free of the host's drift between children: auto (GPU) | on | off; costs up to one more timing window per candidate
    log_level: str = "INFO"          # DEBUG | INFO | WARNING | ERROR
    progress: bool = True            # one line per candidate on stderr
    capture_limit_mb: float = 64.0   # real inputs larger than this are not stored as test vectors
    keep_workdirs: str | None = None  # keep each search's verification work dirs (candidate source, child log with the compiler's output, builds) in a new folder under this one, instead of deleting them
    parallel_builds: int = field(     # candidates of a round built + verified at once (timing stays serial)
        default_factory=lambda: max(1, min(8, (os.cpu_count() or 2) // 2)))
    # -- cache sharing (cache/, graph_runner) ---------------------------------------------------
    lock_timeout_s: float = 1800.0    # wait this long for another process searching the same key, then fall back
    trust_cache_dir: bool = False     # load code from a cache dir not owned by this user (env CUDAL1_TRUST_CACHE_DIR=1)
    # -- LLM engines (openai / vllm / replay) --------------------------------------------------
    api_key: str | None = field(      # bearer token for the server; env CUDAL1_API_KEY or OPENAI_API_KEY
        default_factory=lambda: os.environ.get("OPENAI_API_KEY") or None, metadata=SECRET)
    request_timeout_s: float = 600.0  # read timeout of one completion request
    connect_timeout_s: float = 10.0   # connect timeout (and readiness probe)
    retries: int = 3                  # retries on connection errors, 429 and 5xx (with backoff)
    max_tokens: int = 8192            # completion length limit
    temperature: float = 0.7          # sampling temperature (samples of one round must differ)
    concurrency: int = 4              # requests in flight at once when n is sent as separate requests
    completion_mode: str = "chat"     # chat (/v1/chat/completions) | completion (/v1/completions, raw template)
    prompt_template: str | None = None  # raw template for completion mode; {prompt} is replaced
    record_file: str | None = None    # record every engine request/response as a replay transcript
    gpu_memory_utilization: float = 0.5  # in-process vLLM: share of GPU memory it may take
    # -- shared cache tier across machines -----------------------------------------------------
    remote_cache: str | None = field(  # e.g. redis://127.0.0.1:6379/0 (a password may be in it): read after the local dir, written after it
        default=None, metadata=SECRET)
    remote_timeout_s: float = 5.0     # connect/read timeout of one remote-cache operation
    remote_secret: str | None = field(  # shared key: sign uploads, reject unsigned remote entries (env CUDAL1_REMOTE_SECRET)
        default=None, metadata=SECRET)

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def secret_keys(cls) -> list[str]:
        """Options that must never be written to disk (tokens, keys, URLs that may hold a
        password): a child process gets them in its environment instead."""
        return [f.name for f in dataclasses.fields(cls) if f.metadata.get("secret")]

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

        for name, allowed in (("mode", MODES), ("fallback", FALLBACKS), ("training", FALLBACKS),
                              ("engine", ENGINES), ("completion_mode", COMPLETION_MODES),
                              ("new_shapes", NEW_SHAPES), ("generic", FALLBACKS)):
            if getattr(self, name) not in allowed:
                raise bad(name, "one of " + ", ".join(allowed))
        # a boolean (the type this option had before it took auto|on|off) still reads as on / off
        flag = str(self.arbitrate_cudagraph).strip().lower()
        self.arbitrate_cudagraph = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off",
                                    "no": "off"}.get(flag, flag)
        for name in ("aoti", "max_autotune", "tf32", "cudnn_benchmark", "channels_last", "arbitrate",
                     "arbitrate_cudagraph", "arbitrate_max_autotune", "pair_reference"):
            if getattr(self, name) not in ("auto", "on", "off"):
                raise bad(name, "one of auto, on, off")
        if str(self.log_level).upper() not in LOG_LEVELS:
            raise bad("log_level", "one of " + ", ".join(LOG_LEVELS))
        self.log_level = str(self.log_level).upper()
        from .baselines import BASELINES
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
