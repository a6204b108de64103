"""The child process of the verifier: ``python -m torch_cudal1.verify.child WORKDIR``.

Order of work (each step can end it with a verdict):

1. snapshot the harness's functions (guards), install the audit hook (sandbox);
2. build the reference (native and float64) under one seed and take the canary: its answers to
   one fresh draw, before any candidate code runs (``canary.py``), then snapshot what its forward
   reaches (``guards.reach``); every input draw is seeded from ``os.urandom``, so nothing the
   candidate saw can predict the inputs;
3. import the candidate (its builds happen here or in its constructor) -> build_error / crash;
   build it under the reference's seed;
4. per draw, the candidate runs FIRST (freed blocks of earlier reference outputs are poisoned
   beforehand), its output is snapshotted at return, then the references (native dtype and
   float64) run; checks: exact tensors, async work, input mutation, values, tampering (the
   answers are kept for the later steps while they fit the device, else computed again:
   ``references.py``);
5. anti-caching: earlier outputs unchanged and sharing no memory with later ones (aliasing,
   results kept across calls), the draws again in shuffled order, the same input buffers
   refilled in place, a second run on the same input (nondeterminism), a run under a different
   global RNG state (seed dependence);
6. timing with outputs checked during it, and the refill check again after it; with
   ``pair_reference``, the reference timed right after it under the same lock.

The canary's answers are checked again after verification and after timing: a candidate that
changed what the reference computes is ``timer_tampering``, as one that rebinds what it reaches
is at the next call's guard.

Writes ``result.json``: {"verdict": Verdict, "timing": Timing | None, "build_dir": str | None,
"phases": {name: seconds}}.
"""
from __future__ import annotations

import copy
import importlib
import json
import os
import random
import sys
import threading
import time
import traceback
from pathlib import Path

sys.dont_write_bytecode = True   # the audit hook forbids writes into library dirs (pyc caches)

import torch  # noqa: E402

from ..contracts import Verdict  # noqa: E402
from .. import global_settings  # noqa: E402
from ..task import load_source  # noqa: E402
from . import compile_lock, guards, sandbox  # noqa: E402
from .compare import check_real_tensor, compare, flatten_outputs, pieces  # noqa: E402
from .errors import classify_exception  # noqa: E402
from .runner import CANDIDATE_FILE, REAL_INPUTS_FILE, REQUEST_FILE, RESULT_FILE  # noqa: E402
from .canary import Canary  # noqa: E402
from .float64_trust import distrust  # noqa: E402
from .references import References  # noqa: E402
from .state import ModuleState  # noqa: E402
from ..bench.device_lock import DeviceLock  # noqa: E402
from ..bench.timing_cpus import timing_cpus  # noqa: E402
from ..bench.timing import CheckFailed, time_callable  # noqa: E402

POISON = 9999.0           # written into freed blocks before each candidate call
THREAD_GRACE_S = 0.05     # how long finished-looking outputs must stay unchanged
PREDICTABLE_SEEDS = (42, 0, 1, 1234, 2024)


class Reject(Exception):
    def __init__(self, reason: str, detail: str, **stats):
        super().__init__(f"{reason}: {detail}")
        self.verdict = Verdict.reject(reason, detail, **stats)


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(6), "little")


def _to(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _clone(xs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _upcast(xs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in xs]


def _sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _snapshot(out):
    """Copy of an output as the caller would read it right after return: on the current stream,
    without a device-wide synchronisation."""
    if isinstance(out, torch.Tensor):
        return out.clone() if type(out) is torch.Tensor else out
    if isinstance(out, (list, tuple)):
        return type(out)(_snapshot(o) for o in out) if not hasattr(out, "_fields") else \
            type(out)(*(_snapshot(o) for o in out))
    return out


def _shared_memory(calls: list) -> tuple[int, int] | None:
    """Two calls (indices into ``calls``, each a call's output) whose output tensors share
    memory, or None. By storage range, so a view of a kept buffer or a tensor made over a static
    pool (``from_blob``) counts as much as the same tensor returned twice."""
    spans = []
    for k, out in enumerate(calls):
        for o in flatten_outputs(out):
            if isinstance(o, torch.Tensor) and o.numel():
                s = o.untyped_storage()
                spans.append((str(o.device), s.data_ptr(), s.data_ptr() + s.nbytes(), k))
    spans.sort()
    for i, (dev, _, end, k) in enumerate(spans):
        for dev_b, start_b, _, k_b in spans[i + 1:]:
            if dev_b != dev or start_b >= end:
                break
            if k_b != k:
                return min(k, k_b), max(k, k_b)
    return None


def _same(a, b) -> bool:
    fa, fb = flatten_outputs(a), flatten_outputs(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            for a, b in pieces(x.detach(), y.detach()):   # no whole-output copies beside them
                if not torch.equal(torch.nan_to_num(a), torch.nan_to_num(b.to(a.device))):
                    return False
        elif x != y:
            return False
    return True


def _load_real_inputs(wd: Path):
    from safetensors import safe_open
    with safe_open(str(wd / REAL_INPUTS_FILE), "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    scalars = json.loads(meta["scalars"])
    n = int(meta["n"])
    return [tensors[f"i{i}"] if f"i{i}" in tensors else scalars[f"i{i}"] for i in range(n)]


class Harness:
    def __init__(self, wd: Path, req: dict):
        self.wd, self.req = wd, req
        self.device = req["device"]
        self.phases: dict[str, float] = {}
        self.build_dir: str | None = None
        self.seen_shapes: set = set()
        self.check_stride = bool(req.get("check_stride", False))
        self.lock = DeviceLock("cpu", directory="")   # inactive until run() knows the device
        self.stateful = False   # the reference keeps state across calls (_detect_state)
        self.reached: dict | None = None   # guards.reach() once the reference has run

    # -- helpers ------------------------------------------------------------------------------
    def cmp(self, native, got, hi, layout: bool = True):
        """``layout``: ``native`` is the reference's answer, whose layout ``got`` must keep."""
        return compare(native, got, hi, check_stride=self.check_stride, check_layout=layout,
                       checker=self.checker)

    def _clock(self) -> tuple[float, float]:
        return time.monotonic(), self.lock.waited_s

    def _since(self, mark: tuple[float, float]) -> float:
        """Seconds of work since ``mark``: waits for the device lock are counted apart
        (``lock_wait_s``), so that the phases and the waits add up to the child's time."""
        t0, w0 = mark
        return time.monotonic() - t0 - (self.lock.waited_s - w0)

    def guard(self, when: str) -> None:
        bad = guards.changed(self.snap)
        if self.reached is not None:
            bad += guards.changed(self.reached, self.task, reached=True)
        if bad:
            raise Reject("timer_tampering", f"{when}: changed {', '.join(sorted(bad)[:6])}")

    def _build_reference(self, init) -> None:
        torch.manual_seed(self.seed0)
        with global_settings.applied(self.settings):
            self.ref = self.task.Model(*init).to(self.device).eval()
        try:
            self.ref_hi = copy.deepcopy(self.ref).double()
        except Exception:  # noqa: BLE001
            self.ref_hi = None
        self.hi_ran = False   # whether the float64 copy has answered once (_reference)
        # the reference's state as constructed (buffers, tensor attributes); the candidate's only
        # once the reference proves stateful (_detect_state), before its first call
        self.ref_state, self.hi_state = ModuleState(self.ref), ModuleState(self.ref_hi)

    def _canary_answer(self):
        """The reference's answers to the canary draw, from its state at construction."""
        torch.manual_seed(self.canary_seed)
        inputs = [_to(x, self.device) for x in self.task.get_inputs()]
        torch.manual_seed(_fresh_seed())
        for state in (self.ref_state, self.hi_state):
            state.restore()
        try:
            with self.lock.shared():
                return self._reference(inputs)
        finally:
            for state in (self.ref_state, self.hi_state):
                state.restore()

    def canary_check(self, when: str) -> None:
        t0 = self._clock()
        differs = self.canary.check()
        self.phases["canary_s"] = self.phases.get("canary_s", 0.0) + self._since(t0)
        if differs:
            raise Reject("timer_tampering", f"{when}: the reference's answer to an input the "
                                            f"candidate never saw changed ({differs[:300]})")

    def poison(self) -> None:
        """Overwrite freed allocator blocks of the sizes outputs had, so ``torch.empty`` in the
        candidate cannot hand back a reference's result."""
        budget = 1 << 30
        for shape, dtype in list(self.seen_shapes)[:16]:
            nbytes = dtype.itemsize * int(torch.Size(shape).numel())
            if nbytes > budget:
                continue
            budget -= nbytes
            try:
                t = torch.empty(shape, dtype=dtype, device=self.device)
                t.fill_(POISON if dtype.is_floating_point else 77)
                del t
            except Exception:  # noqa: BLE001 - best effort
                pass

    def reference(self, inputs, hi: bool = True):
        with self.lock.shared():   # other processes' timings on this device wait for it
            return self._reference(inputs, hi)

    def _reference(self, inputs, want_hi: bool = True):
        if self.stateful:   # every call from the state at construction (verify/state.py)
            self.ref_state.restore()
        with global_settings.applied(self.settings):   # whatever the candidate set globally
            native = self.ref(*_clone(inputs))
        hi = None
        if self.ref_hi is not None and want_hi:
            if self.stateful:
                self.hi_state.restore()
            try:
                hi = self.ref_hi(*_upcast(_clone(inputs)))
                self.hi_ran = True
            except Exception as e:  # noqa: BLE001 - an op without float64: native is the reference
                if self.hi_ran and classify_exception(e)[0] == "memory":
                    # it ran before, beside less: the device is full (the candidate's memory, or
                    # other jobs': session 23, L2_3's 43 GB float64 copy beside two other tasks), not
                    # tampered with. Dropping it would loosen the tolerance and the canary would
                    # call that tampering; out of memory is retried alone by the search instead.
                    raise Reject("memory", "the reference's float64 copy ran out of device "
                                           f"memory beside the candidate: {str(e)[:300]}") from None
                self.ref_hi = None
        for o in flatten_outputs(native):
            if isinstance(o, torch.Tensor):
                self.seen_shapes.add((tuple(o.shape), o.dtype))
        _sync(self.device)
        return native, hi

    def call(self, inputs, what: str):
        """One candidate call with the per-call checks; returns its (live) output."""
        with self.lock.shared():
            return self._call(inputs, what)

    def _call(self, inputs, what: str):
        threads = set(threading.enumerate())
        self.poison()
        keep = _clone(inputs)
        try:
            if self.stateful:
                self.new_state.restore()
            out = self.new(*inputs)
            snap = _snapshot(out)
            _sync(self.device)
        except Reject:
            raise
        except Exception as e:  # noqa: BLE001
            reason, detail = classify_exception(e)
            raise Reject(reason, f"{what}: {detail}") from None
        self.guard(f"after {what}")
        for i, o in enumerate(flatten_outputs(out)):
            if isinstance(o, torch.Tensor):
                bad = check_real_tensor(o, i)
                if bad:
                    raise Reject(bad[0], f"{what}: {bad[1]}")
        new_threads = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        if new_threads:
            time.sleep(THREAD_GRACE_S)
        if not _same(snap, out):
            raise Reject("async_work", f"{what}: the output changed after the call returned "
                                       "(work left on a side stream or thread)")
        # Threads the candidate's own code started must be done by the time it returns; idle
        # workers of libraries (compile pools, progress monitors) may stay.
        own = [t for t in new_threads if self._started_by_candidate(t)]
        for t in own:
            t.join(0.2)
        alive = [t.name for t in own if t.is_alive()]
        if alive:
            raise Reject("async_work", f"{what}: threads still running after return: {alive}")
        for j, (a, b) in enumerate(zip(inputs, keep)):
            if isinstance(a, torch.Tensor) and not torch.equal(
                    torch.nan_to_num(a), torch.nan_to_num(b)):
                raise Reject("input_mutated", f"{what}: input {j} was modified by the candidate")
        return out   # equal to the at-return snapshot (checked above); kept live for aliasing

    def _started_by_candidate(self, t: threading.Thread) -> bool:
        target = getattr(t, "_target", None) or getattr(type(t), "run", None)
        code = getattr(target, "__code__", None) or getattr(
            getattr(target, "__func__", None), "__code__", None)
        fn = getattr(code, "co_filename", "") or ""
        return fn == str(self.wd / CANDIDATE_FILE) or not fn.startswith("/")

    def check(self, expected, got, what: str, *, earlier=()):
        native, hi = expected
        reason, detail, stats = self.cmp(native, got, hi)
        if reason == "ok":
            self.worst = max(self.worst, stats.get("rel_error", 0.0))
            return
        if reason == "mismatch":
            for k, (n2, h2) in enumerate(earlier):
                if self.cmp(n2, got, h2)[0] == "ok":
                    raise Reject("stale_output", f"{what}: returned the result of an earlier "
                                                 f"input (draw {k}) instead of this one", **stats)
            if self.seed_guess(got):
                raise Reject("seed_dependent", f"{what}: the output matches inputs drawn from a "
                                               "predictable seed, not the inputs given", **stats)
        raise Reject(reason, f"{what}: {detail}", **stats)

    def seed_guess(self, got) -> bool:
        for s in PREDICTABLE_SEEDS + (self.seed0,):
            torch.manual_seed(s)
            guess = [_to(x, self.device) for x in self.task.get_inputs()]
            try:
                exp = self.reference(guess)
            except Exception:  # noqa: BLE001
                return False
            if self.cmp(exp[0], got, exp[1])[0] == "ok":
                return True
        return False

    def draw(self):
        torch.manual_seed(_fresh_seed())
        inputs = [_to(x, self.device) for x in self.task.get_inputs()]
        torch.manual_seed(_fresh_seed())   # torch.initial_seed() must not reveal the draw's seed
        return inputs

    # -- phases -------------------------------------------------------------------------------
    def run(self) -> dict:
        wd, req = self.wd, self.req
        self.task = load_source((wd / "task.py").read_text(), "cudal1_task",
                                filename=str(wd / "task.py"))
        from ..bench import native
        self.checker = native.load(optional=True)   # C++ checker when built, else Python
        source = (wd / CANDIDATE_FILE).read_text()
        if any(k in source for k in ("compile", "dynamo", "inductor", "torch_cudal1.templates")):
            # Dynamo rebinds some torch functions (torch.manual_seed) when first imported; import
            # it before the snapshot so that its own rebinding is not taken for tampering. (A
            # torch.library custom op, as the built-in templates are, imports it on first call.)
            importlib.import_module("torch._dynamo")
        self.snap = guards.snapshot()
        self.settings = global_settings.snapshot()   # the harness's: the reference runs under them
        self._build_env()
        self.lock = DeviceLock(self.device)   # its files are opened before the sandbox closes
        if "torch._dynamo" in sys.modules:   # a compile on a first call lets go of the lock
            compile_lock.install(self.lock)
        sandbox.install(self.write_roots, self._violation, shared=not self.req.get("isolate"))
        # The reference, and its answer to a draw the candidate never sees, before any of the
        # candidate's code runs (canary.py).
        t_ref = self._clock()
        init = self.task.get_init_inputs()
        self.seed0 = _fresh_seed()
        self._build_reference(init)
        self.canary_seed = _fresh_seed()   # the draw's; the sampled positions' below
        self.canary = Canary(self._canary_answer, _fresh_seed())
        with torch.no_grad():
            self.canary.take()
        if self.canary.off:   # its calls moved state that cannot be put back: as constructed again
            self._build_reference(init)
        self.hi_dropped = distrust(self.canary.native, self.canary.hi)
        if self.hi_dropped:   # decided before any candidate code runs (float64_trust.py)
            self.ref_hi = self.canary.hi = None
        self.reached = guards.reach(self.task)   # its operators are loaded now
        self.phases["reference_s"] = self._since(t_ref)   # built, canary taken
        t0 = self._clock()
        try:
            cand = load_source((wd / CANDIDATE_FILE).read_text(), "cudal1_candidate",
                               filename=str(wd / CANDIDATE_FILE))
        except Exception as e:  # noqa: BLE001 - any failure of untrusted code is a verdict
            reason, detail = classify_exception(e)
            raise Reject(reason, f"import: {detail}") from None
        self.guard("after import")
        if not isinstance(getattr(cand, "ModelNew", None), type):
            raise Reject("no_model_new", "candidate defines no class ModelNew")
        torch.manual_seed(self.seed0)
        try:
            self.new = cand.ModelNew(*init)
            if isinstance(self.new, torch.nn.Module):
                self.new = self.new.to(self.device).eval()
            _sync(self.device)
        except Exception as e:  # noqa: BLE001
            reason, detail = classify_exception(e)
            raise Reject(reason, f"ModelNew(*init): {detail}") from None
        # settings its import or construction changed hold during its calls only, as when served
        self.new, changes = global_settings.scoped(self.new, self.settings)
        self.scoped = global_settings.describe(changes) if changes else None
        self.phases["build_s"] = self._since(t0)
        self.guard("after construction")
        with torch.no_grad():
            with self.lock.shared():   # all of verification's device work, not only the calls
                result = self._verify()
            self.canary_check("after verification")
            if req.get("time_it"):
                result["timing"] = self._time().to_json()
                self.canary_check("after timing")
        leaked = global_settings.leaks(self.settings)
        if leaked:
            raise Reject("global_state", "its calls change process-wide settings: "
                         + global_settings.describe(leaked))
        if self.scoped:
            result["verdict"]["stats"]["settings_scoped"] = self.scoped
        self.guard("at the end")
        return result

    def _build_env(self) -> None:
        """Builds land in a directory keyed by the candidate's source, torch and the GPU, under a
        shared build cache, so a retry of the same source does not rebuild."""
        import hashlib
        src = (self.wd / CANDIDATE_FILE).read_bytes()
        cap = ""
        if self.device.startswith("cuda"):
            cap = "sm%d%d" % torch.cuda.get_device_capability(torch.device(self.device))
        key = hashlib.sha256(src + torch.__version__.encode() + cap.encode()).hexdigest()[:20]
        root = Path(self.req.get("build_root") or (self.wd / "build_cache"))
        d = root / key   # created by the extension builder when the candidate builds anything
        os.environ["TORCH_EXTENSIONS_DIR"] = str(d)
        self.build_dir = str(d)
        self.write_roots = [str(self.wd), str(d)]
        if self.req.get("isolate"):
            # Code from an engine compiles into caches of its own (kept per source, so a retry
            # reuses them): nothing it writes can be read back by another candidate or by the
            # user's process, whose inductor / Triton caches and cudal1 cache are out of reach.
            jit, tmp = root / (key + ".jit"), self.wd / "tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            os.environ.update(TORCHINDUCTOR_CACHE_DIR=str(jit / "inductor"),
                              TRITON_CACHE_DIR=str(jit / "triton"), TRITON_HOME=str(jit),
                              CUPY_CACHE_DIR=str(jit / "cupy"), TMPDIR=str(tmp))
            import tempfile
            tempfile.tempdir = str(tmp)
            self.write_roots.append(str(jit))
            codecache = sys.modules.get("torch._inductor.codecache")
            if codecache is not None and hasattr(codecache, "_HEADER_DIR"):
                # fixed when the module was imported (in the fork-server template, before this)
                codecache._HEADER_DIR = str(jit / "precompiled_headers")
                codecache._HEADER_LOCK_DIR = str(jit / "precompiled_headers" / "locks")

    def _violation(self, detail: str) -> None:
        _write_result(self.wd, {"verdict": Verdict.reject("forbidden_call", detail).to_json(),
                                "build_dir": self.build_dir, "phases": self.phases})
        os._exit(0)

    def _verify(self) -> dict:
        t0 = self._clock()
        trials = max(2, int(self.req["trials"]))
        draws = [self.draw() for _ in range(trials)]
        if self.req.get("real_inputs"):
            draws.append([_to(x, self.device) for x in _load_real_inputs(self.wd)])
        self.worst = 0.0
        self._detect_state(draws[0])
        # answers kept while they fit the device, else computed again from the draw's buffers
        self.draws = draws
        expected = References(lambda k: self._reference(self.draws[k]), self.device)
        outs = []
        for k, inputs in enumerate(draws):
            got = self.call(inputs, f"draw {k}")
            if k == 0:   # the same input twice in a row: results must agree up to rounding
                first = _snapshot(got)
                again = self.call(inputs, "draw 0, second run")
                exp = None   # the reference only once both runs are freed: outputs can be GBs
                if self.cmp(first, again, first, layout=False)[0] != "ok":
                    # Right some of the time: a race. Never right: plainly wrong (uninitialised
                    # or freed memory), reported by the comparison below.
                    exp = self.reference(inputs)
                    if "ok" in (self.cmp(exp[0], first, exp[1])[0], self.cmp(exp[0], again, exp[1])[0]):
                        raise Reject("nondeterministic", "two runs on the same input differ "
                                                         "beyond rounding")
                del again, first
                exp = exp or self.reference(inputs)
                expected.fit(len(draws), exp, got)
            else:
                exp = self.reference(inputs)
            self.check(exp, got, f"draw {k}", earlier=expected)
            expected.append(exp)
            del exp
            outs.append((got, expected.snapshot_home(_snapshot(got))))
        self.expected = expected
        # Earlier results must not change under the caller when later calls run.
        for k, (live, frozen) in enumerate(outs):
            if not _same(live, frozen):
                raise Reject("output_aliased", f"the output of draw {k} changed when later "
                                               "calls ran (a reused output buffer)")
        # Unchanged is not enough: a result kept across calls (a constant output cached once)
        # changes under the caller of one call when the caller updates another's in place.
        self.no_shared_outputs([live for live, _ in outs], lambda: [
            self.reference(self.draws[k], hi=False)[0] for k in (0, 1)], "")
        del outs
        # The same inputs again, shuffled: answers must follow the inputs, not the call order.
        order = list(range(len(draws)))
        random.SystemRandom().shuffle(order)
        for k in order:
            got = self.call(draws[k], f"repeat of draw {k}")
            reason = self.cmp(expected[k][0], got, expected[k][1])[0]
            if reason != "ok":
                raise Reject("nondeterministic" if len(draws) == 1 else "stale_output",
                             f"a repeated call on draw {k} (shuffled order) returned a different "
                             "result")
        self.refill_check("before timing")
        self.rng_check()
        if self.stateful:
            self.evolution_check()
        self.phases["verify_s"] = self._since(t0)
        return {"verdict": Verdict.ok(f"{len(draws)} input draws match; anti-caching checks pass",
                                      rel_error=self.worst, trials=len(draws),
                                      references="kept" if expected.keep else "recomputed",
                                      reference="float64" if self.ref_hi is not None else
                                      "native" + (f" (float64 copy dropped: {self.hi_dropped})"
                                                  if self.hi_dropped else ""),
                                      checker="native" if self.checker is not None else "python",
                                      stateful=self.stateful,
                                      canary=f"off: {self.canary.off}" if self.canary.off
                                      else "kept").to_json()}

    @staticmethod
    def no_shared_outputs(calls: list, reference_calls, when: str, draws=None) -> None:
        """Outputs of separate calls (``calls``, all alive; of ``draws``, default 0, 1, ...) must
        not share memory unless the reference's own do (``reference_calls()``: it returns a
        buffer of its own)."""
        shared = _shared_memory(calls)
        if shared and _shared_memory(reference_calls()) is None:
            a, b = (draws[i] for i in shared) if draws else shared
            raise Reject("output_aliased", f"{when}the outputs of draws {a} and {b} share memory, "
                                           "which the reference's do not (a result kept across "
                                           "calls)")

    def _detect_state(self, inputs) -> None:
        """A reference that answers one input differently on a second call, and as the first
        time once its state at construction is put back, keeps state across calls: from here on
        every call, the candidate's too, starts from the state at construction."""
        if not self.ref_state:
            return
        first, second = self.reference(inputs, hi=False), self.reference(inputs, hi=False)
        if self.cmp(first[0], second[0], None, layout=False)[0] != "ok":
            self.ref_state.restore()
            again = self.reference(inputs, hi=False)
            if self.cmp(first[0], again[0], None, layout=False)[0] == "ok":
                try:
                    self.new_state = ModuleState(self.new)
                except Exception as e:  # noqa: BLE001 - untrusted code
                    raise Reject("error", f"reading the candidate's state: {e}") from None
                self.stateful = True
        self.ref_state.restore()

    def evolution_check(self) -> None:
        """A task that keeps state: the draws in sequence, each side carrying its state from
        call to call as it would when served — a candidate that ignores the state, or updates it
        differently, answers the second call differently."""
        self.ref_state.restore()
        self.hi_state.restore()
        self.new_state.restore()
        self.stateful = False   # no putting back between these calls
        when = "state carried across calls: "
        # Outputs stay alive (all draws' where the answers are kept, else the last two): with
        # the state put back before each call, a buffer the candidate keeps in its state may be
        # made afresh on every call (L3_33's CUDA-L1 solution: a tensor attribute that .to() left
        # behind sends it down its first-call path each time), so reuse shows only here.
        window = len(self.draws) if self.expected.keep else 2
        outs, ref_outs = [], []   # (draw, live output, snapshot)
        try:
            for k, inputs in enumerate(self.draws):
                exp = self.reference(inputs)
                got = self.call(inputs, f"draw {k} in sequence")
                reason, detail, stats = self.cmp(exp[0], got, exp[1])
                if reason != "ok":
                    raise Reject(reason, f"{when}draw {k} in sequence: {detail}", **stats)
                outs = (outs + [(k, got, self.expected.snapshot_home(_snapshot(got)))])[-window:]
                ref_outs = (ref_outs + [(k, exp[0], self.expected.snapshot_home(
                    _snapshot(exp[0])))])[-window:]
                del exp, got
                for (j, live, frozen), (_, ref_live, ref_frozen) in zip(outs, ref_outs):
                    if not _same(live, frozen) and _same(ref_live, ref_frozen):
                        raise Reject("output_aliased", f"{when}the output of draw {j} changed "
                                                       "when later calls ran (a reused output "
                                                       "buffer)")
                self.no_shared_outputs([live for _, live, _ in outs],
                                       lambda: [live for _, live, _ in ref_outs], when,
                                       [j for j, _, _ in outs])
        finally:
            self.stateful = True

    def refill_check(self, when: str) -> None:
        """Refill draw 0's buffers in place with new contents, keeping their addresses, shapes
        and version counters (through ``.data``): a cache keyed on any of those is caught."""
        bufs = self.draws[0]
        fresh = self.draw()
        versions = [b._version if isinstance(b, torch.Tensor) else None for b in bufs]
        for b, f in zip(bufs, fresh):
            if isinstance(b, torch.Tensor) and isinstance(f, torch.Tensor) and b.shape == f.shape:
                b.data.copy_(f)
        _sync(self.device)
        assert versions == [b._version if isinstance(b, torch.Tensor) else None for b in bufs]
        exp = self.reference(bufs)
        got = self.call(bufs, f"refilled buffers ({when})")
        reason, detail, _ = self.cmp(exp[0], got, exp[1])
        if reason != "ok":
            before = self.expected.kept(0)   # unknown where answers are recomputed
            stale = before is not None and self.cmp(before[0], got, before[1])[0] == "ok"
            raise Reject("stale_output" if stale or reason == "mismatch" else reason,
                         f"inputs refilled in place ({when}): "
                         + ("the previous contents' result came back" if stale else detail))
        self.expected[0] = exp

    def rng_check(self) -> None:
        """Same input under two different global RNG states, then under the first again: a
        difference that follows the RNG state is seed dependence, one that does not is
        nondeterminism."""
        inputs, exp = self.draws[-1], self.expected[-1]
        s1, s2 = _fresh_seed(), _fresh_seed()
        torch.manual_seed(s1)
        a = self.call(inputs, "run under RNG state A")
        torch.manual_seed(s2)
        b = self.call(inputs, "run under RNG state B")
        ok_a = self.cmp(exp[0], a, exp[1])[0] == "ok"
        ok_b = self.cmp(exp[0], b, exp[1])[0] == "ok"
        if ok_a and ok_b:
            return
        torch.manual_seed(s1)
        a2 = self.call(inputs, "run under RNG state A again")
        if _same(a, a2) and not _same(a, b):
            raise Reject("seed_dependent", "the output depends on the global RNG state, not only "
                                           "on the inputs")
        raise Reject("nondeterministic", "two runs on the same input differ beyond rounding")

    def _time(self):
        with self.lock.exclusive():   # the device alone: no other process's calls or timings
            host: dict = {}
            with timing_cpus(host):   # and a quiet host CPU where cores are reserved for it
                timing = self._time_alone()
            timing.extra.update(host)
            if self.req.get("pair_reference"):
                ref_host: dict = {}   # a hold of its own: the candidate's threads moved off first
                with timing_cpus(ref_host):
                    timing.extra.update(self._time_reference())
                if "paired_ref_ms" in timing.extra:
                    timing.extra["paired_ref_switches"] = ref_host["involuntary_switches"]
            return timing

    def _time_reference(self) -> dict:
        """The reference timed right after the candidate, in this child, under the same lock and
        CPU reservation: the ratio of the two is free of the host's drift between children
        (launch-bound eager moved up to 2x between records of one task, sessions 16-17)."""
        t0 = self._clock()
        try:
            with global_settings.applied(self.settings):
                t = time_callable(self.ref, self.draws, self.device,
                                  before=self.ref_state.restore if self.stateful else None,
                                  budget_s=float(self.req.get("time_budget_s", 2.0)))
        except Exception as e:  # noqa: BLE001 - it ran in verification: reported, not a verdict
            return {"paired_ref_error": f"{type(e).__name__}: {e}"[:200]}
        self.guard("after timing the reference")
        self.phases["time_ref_s"] = self._since(t0)
        return {"paired_ref_ms": t.median_ms, "paired_ref_spread_ms": t.spread_ms,
                "paired_ref_n": t.n}

    def _time_alone(self):
        t0 = self._clock()

        def check(idx, out):
            bad = [check_real_tensor(o, i) for i, o in enumerate(flatten_outputs(out))
                   if isinstance(o, torch.Tensor)]
            bad = [b for b in bad if b]
            if bad:
                raise CheckFailed(*bad[0])
            _sync(self.device)
            n, h = self.expected[idx]
            reason, detail, _ = self.cmp(n, out, h)
            if reason != "ok":
                raise CheckFailed("stale_output", f"during timing, input set {idx}: {detail}")
            self.guard("during timing")

        try:
            timing = time_callable(self.new, self.draws, self.device, check=check,
                                   before=self.new_state.restore if self.stateful else None,
                                   cuda_graph=bool(self.req.get("cuda_graph")),
                                   budget_s=float(self.req.get("time_budget_s", 2.0)))
        except CheckFailed as e:
            raise Reject(e.reason, e.detail) from None
        except Reject:
            raise
        except Exception as e:  # noqa: BLE001
            reason, detail = classify_exception(e)
            raise Reject(reason, f"during timing: {detail}") from None
        self.guard("after timing")
        self.refill_check("after timing")
        self.phases["time_s"] = self._since(t0)
        return timing


def _write_result(wd: Path, result: dict, _nonce=[]) -> None:  # noqa: B006 - set once in main
    if not _nonce:
        _nonce.append(sys.stdin.readline().strip())
        return
    result["nonce"] = _nonce[0]
    tmp = wd / (RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(result, default=str))
    os.replace(tmp, wd / RESULT_FILE)


def main() -> None:
    import faulthandler
    faulthandler.enable()   # a crash (SIGSEGV in a kernel launcher, say) leaves its stack in the log
    wd = Path(sys.argv[1])
    _write_result(wd, {})   # reads the nonce from stdin before any candidate code runs
    req = json.loads((wd / REQUEST_FILE).read_text())
    h = Harness(wd, req)
    try:
        result = h.run()
    except Reject as r:
        result = {"verdict": r.verdict.to_json()}
    except Exception as e:  # noqa: BLE001
        reason, detail = classify_exception(e)
        result = {"verdict": Verdict.reject(
            reason, f"{detail}\n{traceback.format_exc()[-1500:]}").to_json()}
    result.setdefault("timing", None)
    result["build_dir"] = h.build_dir
    h.phases["lock_wait_s"] = round(h.lock.waited_s, 3)
    result["phases"] = h.phases
    _write_result(wd, result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)   # skip interpreter teardown: candidates' threads or atexit hooks cannot hang us


if __name__ == "__main__":
    main()
