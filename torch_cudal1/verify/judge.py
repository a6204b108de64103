"""The judge: ``python -m torch_cudal1.verify.judge WORKDIR``. It never imports candidate code.

It holds everything a verdict rests on: the reference (native dtype and float64), the input
draws and their answers, the tolerances, the choice of which calls are checked, and the clock.
The candidate runs in a worker process of its own inside the OS sandbox (``os_sandbox.py``,
``harness/worker.py``), which receives seeds and returns outputs through shared memory plus a
description of each call; nothing the worker says is taken as a verdict.

Order of work (each step can end it with a verdict):

1. the reference built under a fresh seed, its answer to draw 0, and whether its float64 copy can
   be trusted (``float64_trust.py``) and whether it keeps state across calls (``state.py``);
2. the worker started: the candidate imported, built and constructed under the same seed;
3. verification, in batches of calls the worker cannot tell from timed ones: every draw (fresh
   inputs from seeds nobody could predict) against the references, the same input twice
   (nondeterminism), outputs sharing memory across or within calls (results kept across calls),
   the draws again in shuffled order, buffers refilled in place, other RNG states (seed
   dependence), the state carried across calls for a stateful task;
4. timing, batch by batch, a new draw for every call: the reference through the same code in
   this process on the same seeds (its answers for every call, its time, and the cost of the
   harness around a call), then the candidate. Every timed call of the candidate is checked, at
   positions it cannot know, against the reference's answer, and some, chosen after the batch,
   in full against float64. Its own reported times must account for the wall time this process
   measured around its batches (``_cross_check``);
5. the refilled-buffer check again.

Writes ``result.json``: {"verdict", "timing", "build_dir", "artifacts", "phases"}; ``artifacts``
names the built files the cache may keep (``loaded_builds.py``).
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

from .. import global_settings
from ..bench.device_lock import DeviceLock, LockTimeout
from ..contracts import Timing, Verdict
from ..harness import protocol
from ..harness.calls import (HELD_FIRST, HELD_OUTPUTS, InputWatch, Inputs, Runner, Slots,
                             fingerprint, flatten, memfd, mix, output_specs, quiet_cpu,
                             refill_tree, rng_moved, rng_state, structure, tensor_leaves,
                             widen)
from ..harness.errors import classify_exception, classify_reported
from ..harness.real_inputs import clone_layout
from ..harness.state import ModuleState
from ..options import env
from ..task import TENSORS_FILE, load_source
from . import cudnn_tf32, freeze, host_load, loaded_builds, os_sandbox, sandbox_files
from .compare import (SLACK, compare, in_dtypes_of, reference_holds, tolerances,
                      within_range)
from .float64_trust import distrust
from .host_load import OthersClock
from .references import References, budget_bytes, nbytes
from .process import CANDIDATE_FILE, REAL_INPUTS_FILE, REQUEST_FILE, RESULT_FILE, own_group

PREDICTABLE_SEEDS = (42, 0, 1, 1234, 2024)
GRADS = ("no_grad", "inference")
NEGATED_ALONE = 4           # inputs negated one at a time, where all together leave no answer
SAMPLED = 1024              # positions of each output checked on every timed call
FLOOR_DRAWS = 4             # fresh draws with an error that tell the native's (Judge.cmp)...
FLOOR_DRAWS_MAX = 16        # ...out of at most this many (an output ReLU cuts nearly all of)
SLOT_SHARE = 1 / 16         # of host memory, for one batch's output slots (each side)
MAX_BATCH = 100
FIRST_CALL_FLOOR_S = 120.0  # an engine's candidate's first calls (its lazy compiles) get this long
MIN_TIMED_BATCH = 4         # calls; a timed batch is never smaller (the first, warm-up one is 3)
BUILD_POLL_S = 2.0          # how often a first call past its allowance is looked at for a compiler
CALL_FLOOR_S = 30.0         # later batches: this, plus 20x what the reference took for the same calls
MIN_TIMED_BATCHES = 3       # and judged on the median batch of at least this many
BUSY_SHARE = 0.25           # of a core, used by other processes during a batch: it judges nothing
HARNESS_ROUNDS = 5          # quiet batches on the reference in both processes before the
                            # candidate's import (at most HARNESS_TRIES tried on a busy host)
HARNESS_TRIES = 8
HARNESS_QUANTILE = 0.75     # of their ratios: a low one takes a share of the harness for the calls
HARNESS_DRIFT = 0.5         # how far the harness's cost per call in the candidate's process may move
                            # from its calibration during a run (its two threads hand each call
                            # over on one core or across two, which costs more on a small VM)
HARNESS_BELOW_S = 0.005     # ... where a reference call is quicker than this (its harness then counts)
WIDE = 64.0                 # the wide draw's inputs: get_inputs()'s times this (``wide_check``)
WORKER_MODULE = "torch_cudal1.harness.worker"
WORKER_ARGS = ("-",)   # its command line's arguments: the program comes on a pipe (``spawn``)


def slot_count(out_bytes: int, host_bytes: int, draws: int) -> int:
    """Output slots of the worker's shared memory: as many calls as SLOT_SHARE of the host's
    memory holds (at most MAX_BATCH), and never fewer than the verification's own batches need
    (every draw and the repeat of the first; a timed batch of four), however large the outputs."""
    fit = int(SLOT_SHARE * host_bytes) // max(out_bytes, 1)
    return int(max(draws + 1, MIN_TIMED_BATCH, min(MAX_BATCH, fit)))


class Reject(Exception):
    def __init__(self, reason: str, detail: str, **stats):
        super().__init__(f"{reason}: {detail}")
        self.verdict = Verdict.reject(reason, detail, **stats)


def held_bytes() -> int:
    """The most of the candidate's outputs (and, alike, of the reference's) the worker holds
    across calls (``calls.HELD_*``): ``CUDAL1_VERIFY_HELD_BYTES``, 256 MiB by default."""
    return int(env("CUDAL1_VERIFY_HELD_BYTES"))


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(6), "little")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _clone(xs, dtype=None, _memo=None):
    """Copies with the inputs' strides (a graph's views and ``as_strided`` depend on them), the
    tensors in lists, tuples and dicts too, one tensor given twice copied once (a write through
    one is seen through the other, as the caller's would be); floating ones in ``dtype`` where
    it is given."""
    memo = {} if _memo is None else _memo

    def one(x):
        if isinstance(x, torch.Tensor):
            if id(x) not in memo:
                memo[id(x)] = clone_layout(
                    x, dtype=dtype if dtype and x.is_floating_point() else None)
            return memo[id(x)]
        if type(x) in (list, tuple):
            return type(x)(one(v) for v in x)
        if type(x) is dict:
            return {k: one(v) for k, v in x.items()}
        return x
    return [one(x) for x in xs]


def _upcast(xs):
    return _clone(xs, torch.float64)


def _spans_overlap(spans: list) -> tuple | None:
    """Two entries of ``spans`` ((device, start, end, owner)) from different owners that share
    memory, as (owner, owner), or None."""
    spans = sorted(spans)
    for i, (dev, _, end, k) in enumerate(spans):
        for dev_b, start_b, _, k_b in spans[i + 1:]:
            if dev_b != dev or start_b >= end:
                break
            if k_b != k:
                return min(k, k_b), max(k, k_b)
    return None


def _tensor_spans(outputs, owner) -> list:
    out = []
    for o in flatten(outputs):
        if isinstance(o, torch.Tensor) and o.numel():
            s = o.untyped_storage()
            out.append((str(o.device), s.data_ptr(), s.data_ptr() + s.nbytes(), owner))
    return out


class Worker:
    """The candidate's process as the judge sees it: a sandboxed child, two pipes, the slots."""

    def __init__(self, judge: "Judge"):
        self.judge = judge
        self.slot_fd = memfd(0)   # sized once the reference's outputs are known (setup)
        self.slots = None
        key = os.urandom(32)   # its replies' and our requests' tags (protocol.py)
        self.signer, self.req_signer = protocol.Signer(key), protocol.Signer(key, b"request")
        self.proc = None
        self.scoped = None
        self.wall_ping = 0.0

    def _send(self, obj, signer=None) -> None:
        try:
            protocol.send(self.req, obj, signer)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the worker is gone: its last words, or its end, are read next (_reply)

    def spawn(self) -> None:
        """Start the process: it imports torch and what a serving process has loaded while the
        judge builds the reference, then waits for its setup."""
        j = self.judge
        wd = j.wd / "worker"
        wd.mkdir(exist_ok=True)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        # ``python -`` reads its program from the pipe: the command line and ``sys.argv`` name
        # no module of the harness, as a serving process's would not (``worker.py``)
        argv = [sys.executable, *WORKER_ARGS]
        program = (f"__import__({WORKER_MODULE!r}, fromlist=['main'])"
                   f".main({req_r}, {rep_w}, {self.slot_fd}, {j.device!r})\n")
        env = os_sandbox.scrubbed_env(j.worker_env)
        if j.sandboxed:
            argv = os_sandbox.wrap(argv, chdir=str(wd), writable=j.write_roots + [str(wd)],
                                   gpu=j.device.startswith("cuda"))
        # read back through this descriptor: the worker may put a link in the log's place
        self.log_fd = os.open(wd / "worker.log", os.O_RDWR | os.O_CREAT | os.O_TRUNC
                              | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        self.proc = subprocess.Popen(argv, cwd=str(wd), env=env, stdin=subprocess.PIPE,
                                     stdout=self.log_fd, stderr=subprocess.STDOUT,
                                     pass_fds=(req_r, rep_w, self.slot_fd),
                                     preexec_fn=own_group)
        try:
            with self.proc.stdin:
                self.proc.stdin.write(program.encode())
        except OSError:
            pass   # it did not start: said where its reply is read (``_reply``)
        self.proc.stdin = None
        os.close(req_r)
        os.close(rep_w)
        self.req, self.rep = req_w, rep_r

    def setup(self, setup: dict, specs: list, count: int, timeout_s: float) -> dict:
        _, slot_bytes = protocol.layout(specs)
        os.ftruncate(self.slot_fd, max(count * slot_bytes, 1))
        self.slots = Slots(self.slot_fd, count, specs, "cpu")
        self._send({**setup, "key": self.signer.key.hex()})
        when = "building the reference" if setup.get("calibrate") else "while importing and building"
        reply, _ = self._reply(timeout_s, when)
        return reply

    def import_candidate(self, timeout_s: float) -> dict:
        """After the harness's calibration on the reference: import and build the candidate."""
        self._send({"op": "import"}, self.req_signer)
        reply, _ = self._reply(timeout_s, "while importing and building")
        return reply

    def log_tail(self, n: int = 1500) -> str:
        return sandbox_files.tail(getattr(self, "log_fd", None), n)

    def _wait_building(self, timeout_s: float, build_until: float) -> float:
        """Wait for the worker's answer up to ``timeout_s``, and past it while a compiler runs in
        its process tree (a lazy build in its first calls), up to ``build_until``; the seconds
        the caller may then wait for the whole message."""
        end = time.monotonic() + timeout_s
        while not select.select([self.rep], [], [], max(0.0, end - time.monotonic()))[0]:
            now = time.monotonic()
            if now >= build_until or not host_load.compiler_running(self.proc.pid):
                return 0.0
            end = min(now + BUILD_POLL_S, build_until)
        return max(1.0, end - time.monotonic())

    def _reply(self, timeout_s: float, when: str, build_until: float | None = None):
        t0 = time.perf_counter()
        try:
            wait = timeout_s
            if build_until is not None and build_until > time.monotonic() + timeout_s:
                wait = self._wait_building(timeout_s, build_until)
                if not wait:
                    raise protocol.Timeout(when)
            reply = protocol.recv(self.rep, wait, self.signer)
        except protocol.Timeout:
            self.kill()
            waited = time.perf_counter() - t0
            raise Reject("timeout", f"no answer {when} within {waited:.0f} s") from None
        except protocol.Forged as e:
            self.kill()
            raise Reject("timer_tampering", f"{when}: {e}") from None
        except protocol.ProtocolError as e:
            rc = self.proc.poll() if self.proc else None
            if rc is None:
                try:
                    rc = self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    rc = None
            tail = self.log_tail()
            self.kill()
            why = "" if rc is None else (f"signal {-rc}" if rc < 0 else f"code {rc}")
            reason = "memory" if ("MemoryError" in tail or "std::bad_alloc" in tail
                                  or "out of memory" in tail) else "crash"
            raise Reject(reason, f"the candidate's process ended {when} ({why or e}): "
                                 f"{tail}") from None
        wall = time.perf_counter() - t0
        if not isinstance(reply, dict):
            self.kill()
            raise Reject("crash", f"protocol: a reply {when} that is not an object")
        if "violation" in reply:
            self.kill()
            raise Reject("forbidden_call", str(reply["violation"])[:500])
        if "tampered" in reply:
            self.kill()
            raise Reject("timer_tampering", f"{when}: {str(reply['tampered'])[:500]}")
        return reply, wall

    def batch(self, calls: list[dict], timeout_s: float, when: str,
              build_until: float | None = None):
        t0 = time.perf_counter()
        self._send({"op": "batch", "calls": calls}, self.req_signer)
        reply, _ = self._reply(timeout_s, when, build_until)
        return reply, time.perf_counter() - t0

    def rebound(self) -> list:
        self._send({"op": "check"}, self.req_signer)
        reply, _ = self._reply(60.0, "checking its process")
        return [str(r) for r in reply.get("rebound") or []]

    def ping(self) -> float:
        t0 = time.perf_counter()
        self._send({"op": "ping"}, self.req_signer)
        self._reply(30.0, "answering a ping")
        return time.perf_counter() - t0

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self._send({"op": "bye"}, self.req_signer)
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for name in ("req", "rep", "log_fd"):
            fd = getattr(self, name, None)
            setattr(self, name, None)   # closed once: the number may be another file's next
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


class Judge:
    def __init__(self, wd: Path, req: dict):
        self.wd, self.req = wd, req
        self.device = req["device"]
        self.phases: dict[str, float] = {}
        self.build_dir: str | None = None
        self.built: loaded_builds.LoadedBuilds | None = None   # once the candidate is imported
        self.check_stride = bool(req.get("check_stride", False))
        self.precision = req.get("precision") or "highest"
        self.compare_at = self.precision   # cudnn_tf32.compare_precision, once the reference ran
        self.deadline = time.monotonic() + float(req.get("timeout_s", 300.0))
        self.trusted = not req.get("isolate")
        self.lock = DeviceLock("cpu", directory="")   # inactive until run() knows the device
        self.worker: Worker | None = None
        self.stateful = False
        self.worst = 0.0
        self.native_abs: list[float] = []
        self.err_floor: list[float] | None = None   # cmp's, once a draw needed it

    def _clock(self) -> tuple[float, float]:
        return time.monotonic(), self.lock.waited_s

    def _since(self, mark: tuple[float, float]) -> float:
        """Seconds of work since ``mark``: waits for the device lock are counted apart
        (``lock_wait_s``), so that the phases and the waits add up to the judge's time."""
        t0, w0 = mark
        return time.monotonic() - t0 - (self.lock.waited_s - w0)

    # -- the reference ------------------------------------------------------------------------
    def _build_reference(self, init) -> None:
        torch.manual_seed(self.seed0)
        self.ref = self.task.Model(*init).to(self.device).eval()
        try:
            self.ref_hi = copy.deepcopy(self.ref).double()
        except Exception:  # noqa: BLE001
            self.ref_hi = None
        self.hi_ran = False
        self.ref_state, self.hi_state = ModuleState(self.ref), ModuleState(self.ref_hi)

    def reference(self, inputs, hi: bool = True):
        with self.lock.shared():
            return self._reference(inputs, hi)

    def _reference(self, inputs, want_hi: bool = True):
        if self.stateful:
            self.ref_state.restore()
        with torch.no_grad():
            xs = _clone(inputs)
            watch = InputWatch(xs) if self.written is None else None
            rng = rng_state(self.device) if watch is not None else None
            native = self.ref(*xs)
            if watch is not None:   # the first call: which inputs the reference writes to
                _sync(self.device)
                self.written, self.ref_tree = watch.changed(xs), structure(native)
                self.ref_rng = rng_moved(rng, self.device)   # and whether it draws at random
            native = self._with_written(native, xs)
            hi = None
            if self.ref_hi is not None and want_hi:
                if self.stateful:
                    self.hi_state.restore()
                try:
                    xs = _upcast(inputs)
                    hi = self._with_written(self.ref_hi(*xs), xs)
                    self.hi_ran = True
                except Exception as e:  # noqa: BLE001 - an op without float64: native is the answer
                    if self.hi_ran and classify_exception(e)[0] == "memory":
                        # it ran before, beside less: the device is full, not tampered with
                        raise Reject("memory", "the reference's float64 copy ran out of device "
                                               f"memory beside the candidate: {str(e)[:300]}") from None
                    self.ref_hi = None
        _sync(self.device)
        return native, hi

    def _with_written(self, out, xs):
        """The reference's answer as the candidate's is compared: its outputs, then the inputs
        it writes to as the call left them (``Runner``'s ``written``: the inputs its first call,
        ever, changed — a buffer it fills, a cache it appends to — which a candidate must write
        alike; found there so that a reference keeping state it cannot put back is called no
        more often than before)."""
        if not self.written:
            return out
        return (*flatten(out), *(t for j in self.written for t in tensor_leaves(xs[j])))

    def draw(self, seed: int, scale: float | None = None, only: int | None = None):
        with torch.no_grad():
            return self.inputs.draw(seed, scale, only)

    # -- comparing ----------------------------------------------------------------------------
    def cmp(self, native, got, hi):
        kw = dict(precision=self.compare_at, checker=self.checker, value_tol=self.value_tol)
        reason, detail, stats = compare(native, got, hi, native_err_floor=self.err_floor, **kw)
        if reason == "mismatch" and stats.get("norm_only") and self.err_floor is None \
                and hi is not None and hi is not native and self.ref_hi is not None:
            # Every element within its bound and only the norm over the bound, which is eight
            # times the native reference's own error on this draw: where an output is a few
            # small differences of larger terms (a ReLU cutting nearly all of an affine map),
            # that error rests on a few elements, and on a lucky draw it is next to nothing.
            # Judged again against the native's largest error on fresh draws, once.
            self.err_floor = self._native_error_on_fresh_draws()
            reason, detail, stats = compare(native, got, hi, native_err_floor=self.err_floor,
                                            **kw)
        return reason, detail, stats

    def _native_error_on_fresh_draws(self) -> list[float]:
        """Per output, the native reference's largest error (the norm of its difference from
        float64) on fresh draws: until FLOOR_DRAWS of them had an error at all, at most
        FLOOR_DRAWS_MAX, and while half the verification's time is left. None for a reference
        that keeps state (its draws are a sequence whose state the timed batches carry on)."""
        floor: list[float] = []
        if self.stateful:
            return floor
        seen = 0
        until = time.monotonic() + (self.deadline - time.monotonic()) / 2
        for _ in range(FLOOR_DRAWS_MAX):
            if seen >= FLOOR_DRAWS or time.monotonic() > until:
                break
            native, hi = self.reference(self.draw(_fresh_seed()))
            if hi is None:
                return []
            some = False
            for i, (n, h) in enumerate(zip(flatten(native), flatten(hi))):
                err = 0.0
                if isinstance(n, torch.Tensor) and isinstance(h, torch.Tensor) and \
                        n.is_floating_point() and n.shape == h.shape and n.numel():
                    h = h.to(n.device).double()
                    fin = torch.isfinite(h) & torch.isfinite(n)
                    err = float((n.double() - h)[fin].norm())
                floor += [0.0] * (i + 1 - len(floor))
                floor[i] = max(floor[i], err)
                some = some or err > 0
            seen += some
        return floor

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
        """Whether ``got`` answers inputs drawn from a seed a candidate could guess, the way a
        benchmark script draws them (on the CPU, then moved) or the way this judge does."""
        for s in PREDICTABLE_SEEDS + (self.seed0,):
            for on_device in (False, True):
                torch.manual_seed(s)
                if on_device:
                    with torch.device(self.device):
                        guess = self.task.get_inputs()
                else:
                    guess = self.task.get_inputs()
                guess = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in guess]
                try:
                    exp = self.reference(guess)
                except Exception:  # noqa: BLE001
                    return False
                if self.cmp(exp[0], got, exp[1])[0] == "ok":
                    return True
        return False

    # -- the candidate's calls ----------------------------------------------------------------
    def _outputs(self, k: int, rec: dict, like, what: str):
        """Call ``k``'s outputs as the judge's own tensors (copied out of shared memory at once:
        the worker could write there later), shaped like the reference's answer ``like``."""
        vals = []
        for i, (m, r) in enumerate(zip(rec["outputs"], flatten(like))):
            if m.get("copied"):
                t = self.worker.slots.view(k, i).clone()
                self.handed_over(t, m, what, i)
                vals.append(t.to(self.device) if self.on_device(t) else t)
            else:
                vals.append(m.get("value"))
        return vals

    @staticmethod
    def handed_over(slot: torch.Tensor, m: dict, what: str, i: int) -> None:
        """The slot holds what the worker's harness copied there the moment the call returned
        (its fingerprint then is in the call's record). Anything written there later (code the
        candidate left to run after its call, a process of its own mapping the slots) is not
        what its caller got."""
        if fingerprint(slot) != m.get("fp"):
            raise Reject("async_work", f"{what}: output {i} in its slot is not what the call "
                                       "returned: it was written after the harness copied it")

    def on_device(self, t) -> bool:
        return self.device.startswith("cuda") and nbytes(t) <= self.move_budget

    def facts(self, rec: dict, like, what: str) -> None:
        """What the worker saw of one call, against the reference's answer ``like``."""
        refs, metas = flatten(like), rec.get("outputs") or []
        if rec.get("rng_moved") and not self.ref_rng:
            raise Reject("global_state", f"{what}: the call drew from or reseeded the global "
                         "random number generator, which the reference leaves alone: served, "
                         "every later random draw of the program would follow it")
        if rec.get("classes_changed"):
            raise Reject("timer_tampering", f"{what}: attributes of "
                         f"{', '.join(map(str, rec['classes_changed']))[:300]} were set around "
                         "the call: the harness's own work on its outputs would run its code, "
                         "outside the call's time")
        if rec.get("hooks_left"):
            raise Reject("timer_tampering", f"{what}: its call returned leaving "
                         f"{', '.join(map(str, rec['hooks_left']))[:300]} in place: the harness's "
                         "own work on its outputs would run its code, outside the call's time")
        if len(metas) != len(refs):
            raise Reject("shape", f"{what}: {len(metas)} outputs, expected {len(refs)}")
        if rec.get("tree") != self.ref_tree:
            raise Reject("shape", f"{what}: returns {str(rec.get('tree'))[:120]}, the reference "
                                  f"{self.ref_tree[:120]} (tensors as *)")
        for i, (m, r) in enumerate(zip(metas, refs)):
            if not isinstance(r, torch.Tensor):   # its value: compared with this call's answer
                if m.get("kind") != "value":
                    raise Reject("mismatch", f"{what}: output {i} is a {m.get('type')}, expected "
                                             f"a {type(r).__name__}")
                continue
            if m.get("kind") != "tensor":
                raise Reject("mismatch", f"{what}: output {i} is a {m.get('type')}, expected a tensor")
            if m.get("type") != "torch.Tensor" or not m.get("dense"):
                raise Reject("lazy_output", f"{what}: output {i} is a {m.get('type')}"
                             + ("" if m.get("dense") else " without dense storage of its own")
                             + ", not an exact torch.Tensor")
        if rec.get("changed_after_return"):
            raise Reject("async_work", f"{what}: output {rec['changed_after_return'][0]} changed "
                                       "after the call returned (work left on a side stream or thread)")
        if rec.get("threads_alive"):
            raise Reject("async_work", f"{what}: threads still running after return: "
                                       f"{rec['threads_alive'][:4]}")
        if rec.get("inputs_mutated"):
            raise Reject("input_mutated", f"{what}: input {rec['inputs_mutated'][0]} was modified "
                                          "by the candidate")
        for i, (m, r) in enumerate(zip(metas, refs)):
            if not isinstance(r, torch.Tensor):
                continue
            if m.get("shape") != list(r.shape):
                raise Reject("shape", f"{what}: output {i} has shape {tuple(m.get('shape') or ())}, "
                                      f"expected {tuple(r.shape)}")
            if m.get("dtype") != str(r.dtype).replace("torch.", ""):
                raise Reject("dtype", f"{what}: output {i} has dtype {m.get('dtype')}, expected "
                                      f"{str(r.dtype).replace('torch.', '')}")
            if torch.device(m.get("device", "meta")).type != r.device.type:
                raise Reject("mismatch", f"{what}: output {i} is on {m.get('device')}, expected "
                                         f"{r.device}")
            if self.check_stride and r.numel() > 1 and m.get("stride") != list(r.stride()):
                raise Reject("stride", f"{what}: output {i} has stride {tuple(m['stride'])}, "
                                       f"expected {r.stride()}")
            if r.numel() > 1 and r.is_contiguous() and not m.get("contiguous"):
                raise Reject("stride", f"{what}: output {i} is not contiguous (stride "
                                       f"{tuple(m['stride'])}, the reference's {r.stride()}): a "
                                       "caller's view() on it fails, and the copy to the "
                                       "reference's layout is left out of the timing")
            if not m.get("copied"):
                raise Reject("crash", f"{what}: output {i} was not handed over")
        for i, m in enumerate(metas):
            if "input" in m and self.ref_input_memory.get(i) != m["input"]:
                raise Reject("output_aliased", f"{what}: output {i} is the memory of input "
                             f"{m['input']}, which the reference's is not (a caller writing to "
                             "the result would change its input)")
        spans = [(m["device"], m["span"][0], m["span"][1], i) for i, m in enumerate(metas)
                 if m.get("span")]
        both = _spans_overlap(spans)
        if both and not self.ref_within_alias:
            raise Reject("output_aliased", f"{what}: outputs {both[0]} and {both[1]} share memory, "
                                           "which the reference's do not (one result handed out twice)")

    def batch_facts(self, reply: dict, whats: list[str], like) -> list:
        """The batch's records, after what the worker saw of each call and of the batch."""
        recs = reply.get("calls")
        if not isinstance(recs, list) or len(recs) > len(whats):
            raise Reject("crash", "protocol: the call records are not a list of at most "
                                  f"{len(whats)}")
        if reply.get("rebound"):
            raise Reject("timer_tampering", f"during {whats[0]}: changed "
                                            f"{', '.join(sorted(map(str, reply['rebound']))[:6])}")
        for rec, what in zip(recs, whats):
            if not isinstance(rec, dict):
                raise Reject("crash", "protocol: a call record that is not an object")
            self.facts(rec, like, what)
        err = reply.get("error")
        if err:
            k = int(err.get("index", 0))
            reason, detail = classify_reported(str(err.get("type")), str(err.get("text")))
            raise Reject(reason, f"{whats[min(k, len(whats) - 1)]}: {detail}")
        if len(recs) != len(whats):
            raise Reject("crash", f"protocol: {len(recs)} call records for {len(whats)} calls")
        if reply.get("settings_leaked"):
            raise Reject("global_state", "its calls change process-wide settings: "
                                         + str(reply["settings_leaked"]))
        return recs

    def run_calls(self, calls: list[dict], whats: list[str], like, timeout_s: float | None = None,
                  locked: bool = True, build_until: float | None = None):
        """The candidate runs ``calls``; (records, outputs per call, wall seconds)."""
        if timeout_s is None:
            timeout_s = self.call_timeout(len(calls))
        with self.lock.shared() if locked else contextlib.nullcontext():
            reply, wall = self.worker.batch(calls, timeout_s, f"in {whats[0]}", build_until)
        recs = self.batch_facts(reply, whats, like)
        self.guard(f"after {whats[-1]}")
        outs = [self._outputs(k, rec, like, whats[k]) for k, rec in enumerate(recs)]
        self.outputs_kept_apart(reply, recs, whats)
        return recs, outs, wall

    def outputs_kept_apart(self, reply: dict, recs: list, whats: list[str]) -> None:
        """output_aliased where a batch's outputs share memory, or a call changed an earlier
        call's output (in this batch, or one the worker holds from an earlier batch), where the
        reference's calls give each its own."""
        # An output that is its input's memory (as the reference's is, facts() saw to that)
        # changes when the harness refills that input and is shared by calls on the same input.
        later = [(k, i) for k, i in reply.get("changed_later") or ()
                 if "input" not in recs[k]["outputs"][i]]
        if later:
            k, i = later[0]
            raise Reject("output_aliased", f"the output of {whats[k]} changed when later calls ran "
                                           "(a reused output buffer)")
        spared = self.ref_shared_outputs()
        spans = [(m["device"], m["span"][0], m["span"][1], k) for k, rec in enumerate(recs)
                 for i, m in enumerate(rec["outputs"])
                 if m.get("span") and "input" not in m and i not in spared]
        shared = _spans_overlap(spans)
        if shared:
            raise Reject("output_aliased", f"the outputs of {whats[shared[0]]} and "
                                           f"{whats[shared[1]]} share memory, which the "
                                           "reference's do not (a result kept across calls)")
        held = reply.get("held_inputs_changed")
        if held:
            raise Reject("input_mutated", f"{str(held)[:200]}, in the batch from {whats[0]}: a "
                                          "caller's tensor written after its call returned")
        held = reply.get("held_changed")
        if held:   # the worker holds only outputs the reference gives memory of their own
            raise Reject("output_aliased", f"{str(held)[:200]}, in the batch from {whats[0]} "
                                           "(a reused output buffer: a caller that keeps an "
                                           "output sees it overwritten)")

    def guard(self, when: str) -> None:
        rebound = self.worker.rebound()
        if rebound:
            raise Reject("timer_tampering", f"{when}: changed {', '.join(sorted(rebound)[:6])}")

    def _reference_input_memory(self) -> dict:
        """{output index: input index} for the reference's outputs that are (part of) an input's
        memory: a graph that hands back its input or a view of it."""
        xs = _clone(self.draws[0])
        with self.lock.shared(), torch.no_grad():
            if self.stateful:
                self.ref_state.restore()
            outs = self._with_written(self.ref(*xs), xs)
        _sync(self.device)
        ins = [(d, a, b, j) for j, x in enumerate(xs) for d, a, b, _ in _tensor_spans([x], j)]
        found = {}
        for i, x in enumerate(flatten(outs)):
            for d, a, b, _ in _tensor_spans([x], i):
                hit = next((j for dj, s, e, j in ins if dj == d and a < e and s < b), None)
                if hit is not None:
                    found[i] = hit
        return found

    def ref_shared_outputs(self) -> set[int]:
        """The reference's outputs whose memory its next call hands out again (a parameter or a
        buffer it returns): those alone are spared the checks across calls."""
        if self._ref_shares is None:
            a = flatten(self.reference(self.draws[0], hi=False)[0])
            b = flatten(self.reference(self.draws[min(1, len(self.draws) - 1)], hi=False)[0])
            spans_b = [(i, sp) for i, o in enumerate(b) for sp in _tensor_spans([o], i)]
            shared = set()
            for i, o in enumerate(a):
                for d, s0, e0, _ in _tensor_spans([o], i):
                    for j, (d2, s1, e1, _) in spans_b:
                        if d == d2 and s0 < e1 and s1 < e0:
                            shared |= {i, j}
            self._ref_shares = shared
        return self._ref_shares

    def call_timeout(self, n_calls: int, ref_s: float | None = None) -> float:
        """How long a batch of the candidate's calls may take: in proportion to the reference's
        own time for them (the harness's own candidates: what is left of the whole limit)."""
        left = max(1.0, self.deadline - time.monotonic())
        if self.trusted:
            return left
        per = self.ref_call_s if ref_s is None else ref_s / max(n_calls, 1)
        return max(1.0, min(CALL_FLOOR_S + 20 * per * n_calls, left))

    def spec(self, **kw) -> dict:
        c = {"grad": random.SystemRandom().choice(GRADS)}
        if self.stateful:
            c["restore"] = True
        c.update(kw)
        return c

    # -- phases -------------------------------------------------------------------------------
    def run(self) -> dict:
        wd, req = self.wd, self.req
        task_file = wd / "task.py"
        self.task = load_source(task_file.read_text(), "cudal1_task", filename=str(task_file))
        from ..bench import native
        self.checker = native.load(optional=True)
        user = global_settings.from_json(req.get("settings") or {})
        # The reference: the user's settings, float32 products at full precision (the tolerance,
        # not the reference, follows the precision the user asked for).
        global_settings.apply(user)
        # This process holds them for good: nothing else runs here.
        torch.set_float32_matmul_precision("highest")
        self.lock = DeviceLock(self.device)
        self.lock.deadline = self.deadline   # waiting for another process's timing counts too
        self._ref_shares = None
        self.written, self.ref_tree, self.value_tol = None, "*", None
        self.ref_rng = False   # whether the reference's calls draw from the global RNG
        self.hold_outputs = None   # whether the worker holds outputs across batches (_may_hold)
        self.hold_once = False
        self._held_once = False    # the timing run's one hold of outputs too large for more
        # a stateful task's timing run: one sequence (_timed_calls, _sequence_long_enough)
        self._sequence_started, self._sequence_grad, self._sequence_len = False, None, None
        self._spawn_worker()
        t0 = self._clock()
        init = self.task.get_init_inputs()
        self.seed0 = _fresh_seed()
        self._build_reference(init)
        real = None
        if req.get("real_inputs"):
            real = _load_real_inputs(wd)
        self.inputs = Inputs(self.task, self.device, real)
        trials = max(2, int(req.get("trials", 3)))
        self.seeds = [_fresh_seed() for _ in range(trials)]
        self.draws = [self.draw(s) for s in self.seeds]
        if real is not None:
            self.seeds.append(None)
            self.draws.append(self.inputs.real())
        self._detect_state(self.draws[0])
        # Python floats a task returns are held to the tightest bound of its floating tensors
        self.value_tol = min((tolerances(t.dtype, self.precision)[0]
                              for t in tensor_leaves(self.draws[0])
                              if t.is_floating_point()), default=None)
        t_ref = time.perf_counter()
        if self.precision == "highest" and cudnn_tf32.allowed(self.device):
            first, conv = cudnn_tf32.run_noting(self.reference, self.draws[0])
            self.compare_at = cudnn_tf32.compare_precision(self.precision, self.device, conv)
        else:
            first = self.reference(self.draws[0])
        self.ref_call_s = max(time.perf_counter() - t_ref, 1e-4)
        self.hi_dropped = distrust(*first)
        if self.hi_dropped:   # decided before any candidate code runs (float64_trust.py)
            self.ref_hi = None
            first = (first[0], None)
        t_ref = time.perf_counter()
        self.reference(self.draws[0], hi=False)
        self.ref_call_s = max(min(self.ref_call_s, time.perf_counter() - t_ref), 1e-5)
        self.specs = output_specs(first[0])
        out_bytes = sum(s["nbytes"] for s in self.specs if s)
        self.move_budget = budget_bytes(self.device) // 4
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.batch = slot_count(out_bytes, host, len(self.draws))
        self.ref_specs_like = first[0]
        self.ref_within_alias = _spans_overlap([(d, a, b, i) for i, (d, a, b, _) in
                                                enumerate(_tensor_spans(first[0], 0))]) is not None
        self.ref_input_memory = self._reference_input_memory()
        self.phases["reference_s"] = round(self._since(t0), 3)
        self._start_worker()
        result = self._verify()
        self._look_at_builds("verification")
        if req.get("time_it"):
            result["timing"] = self._time().to_json()
            self._look_at_builds("timing")
        result["artifacts"] = self.built.files()
        if self.worker.__dict__.get("scoped"):
            result["verdict"]["stats"]["settings_scoped"] = self.worker.scoped
        return result

    def _spawn_worker(self) -> None:
        """The candidate's process, started before the reference is built so that its
        interpreter's start overlaps the judge's own work."""
        req, wd = self.req, self.wd
        self.sandboxed = os_sandbox.active()
        if not self.sandboxed and os_sandbox.required():
            raise Reject("sandbox", "CUDAL1_SANDBOX=bwrap, but " + (os_sandbox.check() or "it is off"))
        src = (wd / CANDIDATE_FILE).read_bytes()
        import hashlib
        cap = ""
        if self.device.startswith("cuda"):
            cap = "sm%d%d" % torch.cuda.get_device_capability(torch.device(self.device))
        key = hashlib.sha256(src + torch.__version__.encode() + cap.encode()).hexdigest()[:20]
        root = Path(req.get("build_root") or (wd / "build_cache"))
        d = root / key
        self.build_dir = str(d)
        env = dict(os.environ)
        env.update(req.get("worker_env") or {})
        env["TORCH_EXTENSIONS_DIR"] = str(d)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["CUDA_CACHE_PATH"] = str(d) + ".nv"
        env["TMPDIR"] = str(wd / "worker" / "tmp")
        (wd / "worker" / "tmp").mkdir(parents=True, exist_ok=True)
        self.write_roots = [str(d), str(d) + ".nv"]
        if not self.trusted:
            # Code from an engine compiles into caches of its own (kept per source, so a retry
            # reuses them): nothing it writes can be read by another candidate or the user.
            jit = root / (key + ".jit")
            env.update(TORCHINDUCTOR_CACHE_DIR=str(jit / "inductor"),
                       TRITON_CACHE_DIR=str(jit / "triton"), TRITON_HOME=str(jit),
                       CUPY_CACHE_DIR=str(jit / "cupy"))
            self.write_roots.append(str(jit))
        else:
            # The harness's own candidates share the user's compiler caches, so that their
            # compiles are reused by later candidates and by the serving process.
            try:
                from torch._inductor.runtime.cache_dir_utils import default_cache_dir
                ind = env.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()
            except ImportError:
                import getpass
                ind = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
                    tempfile.gettempdir(), "torchinductor_" + getpass.getuser())
            tri = env.get("TRITON_CACHE_DIR") or os.path.join(
                env.get("TRITON_HOME") or os.path.expanduser("~"), ".triton", "cache")
            env.update(TORCHINDUCTOR_CACHE_DIR=ind, TRITON_CACHE_DIR=tri)
            self.write_roots += [ind, tri]
        self.worker_env = env
        self.worker = Worker(self)
        self.worker.spawn()

    def _start_worker(self) -> None:
        req, wd = self.req, self.wd
        # The worker's own copies, in the one folder it may write to: code that builds beside
        # its own file (``os.path.dirname(__file__)``) builds there, and what it does to them
        # changes nothing the judge reads.
        own = wd / "worker"
        for name in ("task.py", TENSORS_FILE, CANDIDATE_FILE, REAL_INPUTS_FILE):
            if (wd / name).exists():
                shutil.copy2(wd / name, own / name)
        setup = {"task_file": str(own / "task.py"), "candidate": str(own / CANDIDATE_FILE),
                 "device": self.device, "seed0": self.seed0, "settings": req.get("settings") or {},
                 "specs": self.specs, "slots": self.batch, "stateful": self.stateful,
                 "written": self.written,
                 "real_inputs": str(own / REAL_INPUTS_FILE) if req.get("real_inputs") else None,
                 "write_roots": self.write_roots + [str(wd / "worker")],
                 "isolate": not self.trusted, "sandboxed": self.sandboxed,
                 "calibrate": bool(req.get("time_it") and not self.trusted and not self.stateful
                                   and self.ref_call_s < HARNESS_BELOW_S)}
        t0 = self._clock()
        reply = self.worker.setup(setup, self.specs, self.batch,
                                  max(1.0, self.deadline - time.monotonic()))
        if "calibrating" in reply:
            if reply["calibrating"]:
                self.harness_ratio = self._harness_ratio()
            else:   # its reference would not build there: the cross-check goes without it
                self.harness_unmeasured = str(reply.get("text"))[-300:]
            reply = self.worker.import_candidate(max(1.0, self.deadline - time.monotonic()))
        self.phases["build_s"] = round(self._since(t0), 3)
        if reply.get("error"):
            e = reply["error"]
            if e.get("type") == "no_model_new":
                raise Reject("no_model_new", "candidate defines no class ModelNew")
            reason, detail = classify_reported(str(e.get("type")), str(e.get("text")))
            raise Reject(reason, f"{e.get('where', 'import')}: {detail}")
        if not reply.get("ready"):
            raise Reject("crash", "protocol: the candidate's process did not say it was ready")
        if reply.get("rebound"):
            raise Reject("timer_tampering", "after import and construction: changed "
                                            + ", ".join(sorted(map(str, reply["rebound"]))[:6]))
        if reply.get("switches_moved"):
            raise Reject("global_state", "its import or construction changes process-wide "
                                         "switches: " + str(reply["switches_moved"])[:300])
        self.worker.scoped = reply.get("scoped")
        self.built = loaded_builds.LoadedBuilds(self.build_dir, self.worker.proc.pid,
                                                WORKER_ARGS, packages=self.trusted)
        self._look_at_builds("import")
        self.worker.wall_ping = min(self.worker.ping() for _ in range(3))

    def _look_at_builds(self, when: str) -> None:
        """What the cache may keep of the candidate's build is what its process loaded, unchanged
        since (``loaded_builds.py``)."""
        try:
            self.built.look(f"after {when}")
        except loaded_builds.Changed as e:
            raise Reject("artifact_changed", str(e)) from None

    @contextlib.contextmanager
    def _reference_runner(self):
        """The reference run through the harness's own runner in this process, into output
        slots of its own (the worker's layout): ``(runner, slots)``."""
        fd = memfd(self.worker.slots.slot_bytes * self.batch)
        slots = Slots(fd, self.batch, self.specs, "cpu")
        try:
            yield Runner(self.ref, self.inputs, slots, self.device,
                         state=self.ref_state if self.stateful else None,
                         written=self.written), slots
        finally:
            slots.close()
            os.close(fd)

    def _harness_ratio(self) -> float | None:
        """What the harness costs per call in the candidate's process beside what it costs in
        this one, measured on the reference in both before the candidate is imported (nothing
        of the candidate can move it): the upper quartile (HARNESS_QUANTILE) of HARNESS_ROUNDS
        batches during which other processes left the host's CPU alone (``OthersClock``, as for
        timed batches; where none was, of all). The two processes differ (the sandbox, the
        pipe's reply, another core, another interpreter's memory), and where calls are short the
        judge's clock must know by how much (``_cross_check``): a ratio measured low, by one
        round's hiccup on this side, would leave the harness's cost in the worker for the
        candidate's calls to explain."""
        w = self.worker
        ipc = min(w.ping() for _ in range(3))
        budget = float(self.req.get("time_budget_s", 2.0))
        # each batch a 48th of the timing budget: the most tried (HARNESS_TRIES) take a sixth
        # of it
        size = max(MIN_TIMED_BATCH, min(self.batch, int(max(budget / 48, 0.015)
                                                          / max(self.ref_call_s, 1e-6))))
        rng = random.SystemRandom()
        quiet, busy = [], []
        others = OthersClock(w.proc.pid if w.proc else None)
        with self._reference_runner() as (runner, _), self.lock.exclusive(), quiet_cpu({}):
            for r in range(HARNESS_TRIES + 1):   # the first warms both sides
                if len(quiet) >= HARNESS_ROUNDS:
                    break
                calls = self._timed_calls(3 if r == 0 else size, rng, run=False)
                others.start()
                t = time.perf_counter()
                mine = runner.run(calls)
                w_r = time.perf_counter() - t
                theirs, w_c = w.batch(calls, self.call_timeout(len(calls), w_r),
                                      "timing the harness on the reference")
                others_s = others.others_s()
                if mine.get("error") or theirs.get("error"):
                    return None
                c_j = w_r - sum(c["ms"] for c in mine["calls"]) / 1e3
                c_w = w_c - ipc - sum(c["ms"] for c in theirs["calls"]) / 1e3
                if r and c_j > 0:
                    hit = others_s is not None and others_s > BUSY_SHARE * (w_r + w_c)
                    (busy if hit else quiet).append(max(c_w, 0.0) / c_j)
        ratios = sorted(quiet or busy)
        self.harness_ratios = [round(x, 3) for x in ratios]
        self.harness_busy_rounds = len(busy)
        return ratios[min(len(ratios) - 1, int(HARNESS_QUANTILE * len(ratios)))] if ratios else None

    def _detect_state(self, inputs) -> None:
        """A reference that answers one input differently on a second call, and as the first
        time once its state at construction is put back, keeps state across calls: from here on
        every call, the candidate's too, starts from the state at construction."""
        if not self.ref_state:
            return
        first, second = self.reference(inputs, hi=False), self.reference(inputs, hi=False)
        if compare(first[0], second[0], None)[0] != "ok":
            self.ref_state.restore()
            again = self.reference(inputs, hi=False)
            if compare(first[0], again[0], None)[0] == "ok":
                self.stateful = True
        self.ref_state.restore()

    def _verify(self) -> dict:
        t0 = self._clock()
        n = len(self.draws)
        calls, whats = [], []
        for k in range(n):
            src = {"real": True} if self.seeds[k] is None else {"seed": self.seeds[k]}
            calls.append(self.spec(keep_as=f"d{k}", **src))
            if k == 0:
                # Its first call under no_grad: state it makes lazily then is an ordinary tensor,
                # which later calls may update under either mode (one made under inference mode
                # could only be updated in inference mode).
                calls[0]["grad"] = "no_grad"
            whats.append(f"draw {k}")
            if k == 0:   # the same input twice in a row: results must agree up to rounding
                # (under inference mode: code compiled per autograd mode compiles for both here,
                # within the first calls' allowance)
                calls.append(self.spec(reuse="d0", grad="inference"))
                whats.append("draw 0, second run")
        first_s = None if self.trusted else max(FIRST_CALL_FLOOR_S, 100 * self.ref_call_s * len(calls))
        timeout = max(1.0, self.deadline - time.monotonic()) if first_s is None else \
            max(1.0, min(first_s, self.deadline - time.monotonic()))
        # Its first calls are where lazy compiles happen (CPU work, minutes for max-autotune):
        # without the device lock, so that other processes' timings do not wait for them; while
        # a compiler runs in its tree, up to the verification's whole limit.
        recs, outs, _ = self.run_calls(calls, whats, self.ref_specs_like, timeout_s=timeout,
                                       locked=False, build_until=self.deadline)
        first, again = outs[0], outs[1]
        outs = [outs[0]] + outs[2:]
        if self.cmp(first, again, first)[0] != "ok":
            exp = self.reference(self.draws[0])
            if "ok" in (self.cmp(exp[0], first, exp[1])[0], self.cmp(exp[0], again, exp[1])[0]):
                raise Reject("nondeterministic", "two runs on the same input differ beyond rounding")
        del again
        expected = References(lambda k: self._reference(self.draws[k]), self.device)
        for k in range(n):
            exp = self.reference(self.draws[k])
            if k == 0:
                expected.fit(n, exp, outs[0])
                self._native_error(exp)
            self.check(exp, outs[k], f"draw {k}", earlier=expected)
            expected.append(exp)
            del exp
        self.expected = expected
        # The same inputs again, shuffled: answers must follow the inputs, not the call order.
        order = list(range(n))
        random.SystemRandom().shuffle(order)
        _, again, _ = self.run_calls([self.spec(reuse=f"d{k}") for k in order],
                                     [f"repeat of draw {k}" for k in order], self.ref_specs_like)
        for k, got in zip(order, again):
            if self.cmp(expected[k][0], got, expected[k][1])[0] != "ok":
                raise Reject("nondeterministic" if n == 1 else "stale_output",
                             f"a repeated call on draw {k} (shuffled order) returned a different "
                             "result")
        del again
        self.refill_check("before timing")
        for _ in range(3):
            self.refill_check("before timing", partial=True)
        self.rng_check()
        wide = self.wide_check()
        negated = self.negated_check()
        if self.stateful:
            self.evolution_check()
        self.phases["verify_s"] = round(self._since(t0), 3)
        return {"verdict": Verdict.ok(
            f"{n} input draws match; anti-caching checks pass",
            rel_error=self.worst, trials=n,
            references="kept" if expected.keep else "recomputed",
            reference="float64" if self.ref_hi is not None else
            "native" + (f" (float64 copy dropped: {self.hi_dropped})" if self.hi_dropped else ""),
            checker="native" if self.checker is not None else "python",
            stateful=self.stateful, precision=self.precision, wide_draw=wide,
            negated_draw=negated,
            **({"compared_at": f"{self.compare_at} (cuDNN may run its float32 convolutions in "
                               "TF32: torch.backends.cudnn.allow_tf32)"}
               if self.compare_at != self.precision else {}),
            sandbox="bwrap" if self.sandboxed else "none").to_json()}

    def _native_error(self, exp) -> None:
        """Per output, the native reference's largest error against float64 on draw 0: the
        slack of the element checks made on every timed call."""
        native, hi = exp
        for n, h in zip(flatten(native), flatten(hi) if hi is not None else flatten(native)):
            if isinstance(n, torch.Tensor) and n.is_floating_point() and isinstance(h, torch.Tensor) \
                    and n.numel() and n.shape == h.shape:
                d = (n.double() - h.to(n.device).double()).abs()
                d = d[torch.isfinite(d)]
                self.native_abs.append(float(d.max()) if d.numel() else 0.0)
            else:
                self.native_abs.append(0.0)

    def refill_check(self, when: str, partial: bool = False) -> None:
        """Draw 0's buffers refilled in place with a new draw, keeping their addresses, shapes
        and version counters: a cache keyed on any of those is caught. ``partial``: only part
        of them (``calls.mix``), which a cache keyed on a few of their values misses too."""
        seed = _fresh_seed()
        mask = _fresh_seed() if partial else None
        fresh = self.draw(seed)
        for b, f in zip(self.draws[0], fresh):
            refill_tree(b, f, mask)
        _sync(self.device)
        exp = self.reference(self.draws[0])
        spec = self.spec(refill="d0", seed=seed)
        if partial:
            spec["partial"] = mask
            when = f"in part, {when}"
        _, outs, _ = self.run_calls([spec], [f"refilled buffers ({when})"], self.ref_specs_like)
        got = outs[0]
        reason, detail, _ = self.cmp(exp[0], got, exp[1])
        if reason != "ok":
            before = self.expected.kept(0)
            stale = before is not None and self.cmp(before[0], got, before[1])[0] == "ok"
            raise Reject("stale_output" if stale or reason == "mismatch" else reason,
                         f"inputs refilled in place ({when}): "
                         + ("the previous contents' result came back" if stale else detail))
        self.expected[0] = exp

    def rng_check(self) -> None:
        """The same input under two different global RNG states, then under the first again: a
        difference that follows the RNG state is seed dependence, one that does not is
        nondeterminism."""
        k = len(self.draws) - 1
        exp = self.expected[-1]
        s1, s2 = _fresh_seed(), _fresh_seed()
        _, (a, b), _ = self.run_calls([self.spec(reuse=f"d{k}", rng=s1), self.spec(reuse=f"d{k}", rng=s2)],
                                      ["run under RNG state A", "run under RNG state B"],
                                      self.ref_specs_like)
        ok_a = self.cmp(exp[0], a, exp[1])[0] == "ok"
        ok_b = self.cmp(exp[0], b, exp[1])[0] == "ok"
        if ok_a and ok_b:
            return
        _, (a2,), _ = self.run_calls([self.spec(reuse=f"d{k}", rng=s1)],
                                     ["run under RNG state A again"], self.ref_specs_like)
        same = lambda x, y: self.cmp(x, y, x)[0] == "ok" and all(  # noqa: E731
            torch.equal(p, q) for p, q in zip(flatten(x), flatten(y)) if isinstance(p, torch.Tensor))
        if same(a, a2) and not same(a, b):
            raise Reject("seed_dependent", "the output depends on the global RNG state, not only "
                                           "on the inputs")
        raise Reject("nondeterministic", "two runs on the same input differ beyond rounding")

    def wide_check(self) -> str:
        """A draw WIDE times as large as ``get_inputs`` makes it (``calls.widen``): where the
        reference, in the task's own dtype, still gets it right against float64, the candidate
        must too. Inputs of a magnitude real activations reach and ``randn`` never does find
        kernels right only near zero: a softmax or a log-sum-exp without its max subtracted, a
        softplus as ``log(1 + exp(x))``, a tanh from ``exp(2x)``, intermediates in float16, a
        polynomial valid on [-4, 4]. Tasks whose reference itself loses such inputs (overflow,
        a float64 copy not to be trusted) skip it, and the verdict says so (``wide_draw``)."""
        return self._scaled_check(WIDE, f"inputs {WIDE:g} times as wide as get_inputs draws them")

    def negated_check(self) -> str:
        """A draw with every floating input negated: a task that draws ``torch.rand`` (never
        negative) is not a promise that the model only ever sees positive values, and a
        candidate that drops a ReLU, an ``abs`` or a clamp those draws never need is wrong on
        the rest. Same magnitudes as the usual draws, so judged at their bounds wherever the
        reference gives finite answers there (``negated_draw``); a reference that does not (a
        log, a square root of its input) has no answer to hold the candidate to."""
        how = self._scaled_check(-1.0, "inputs negated (get_inputs's draw times -1)")
        if not how.startswith("skipped: the reference's answers there are not all finite"):
            return how
        # One input without an answer for negative values (a log of probabilities) keeps the
        # others from being negated together: each is negated alone instead (up to NEGATED_ALONE
        # of them, drawn at random), wherever the reference's answers stay finite.
        floating = [j for j, x in enumerate(self.draws[0])
                    if any(t.is_floating_point() or t.is_complex() for t in tensor_leaves(x))]
        if len(floating) < 2:
            return how
        done = []
        for j in random.SystemRandom().sample(floating, min(NEGATED_ALONE, len(floating))):
            alone = self._scaled_check(-1.0, f"input {j} negated", only=j)
            if not alone.startswith("skipped"):
                done.append(j)
        return (f"checked with input{'s' if len(done) > 1 else ''} "
                f"{', '.join(map(str, sorted(done)))} negated alone" if done else
                "skipped: the reference's answers are not all finite with any input negated")

    def _scaled_check(self, scale: float, what: str, only: int | None = None) -> str:
        if self.ref_hi is None:
            return "skipped: no float64 reference to tell right from wrong there"
        seed = _fresh_seed()
        xs = self.draw(seed)
        with torch.no_grad():
            if not widen(xs if only is None else [xs[only]], scale):
                return "skipped: no floating input to scale"
        try:
            native, hi = self.reference(xs)
        except Exception as e:  # noqa: BLE001 - values it cannot take (an index made from them)
            return f"skipped: the reference fails there ({type(e).__name__}: {str(e)[:160]})"
        if hi is None:
            return "skipped: no float64 reference to tell right from wrong there"
        if output_specs(native) != self.specs:
            return "skipped: the reference's outputs there have other shapes or dtypes"
        if scale < 0 and not all(bool(torch.isfinite(t).all()) for t in tensor_leaves(native)
                                 if t.is_floating_point() or t.is_complex()):
            return "skipped: the reference's answers there are not all finite (outside its domain)"
        own = reference_holds(native, hi, self.compare_at)
        if own[0] != "ok":
            return f"skipped: the reference itself is off there ({own[0]}: {own[1][:160]})"
        strict, how = self._strict_there(xs, native, hi, scale)
        del xs
        _, outs, _ = self.run_calls([self.spec(seed=seed, scale=scale, only=only)], [what],
                                    self.ref_specs_like)
        native, got, hi = within_range(native, outs[0], hi)
        bounds = {} if strict else {"norm_tol": 1e30, "elem_tol": 1e30}
        reason, detail, stats = compare(native, got, hi, precision=self.compare_at,
                                        checker=self.checker, value_tol=self.value_tol,
                                        tails=False, **bounds)
        if reason != "ok":
            raise Reject(reason, f"{what} (the reference in its own dtype gets them right): "
                                 f"{detail}", **stats)
        return how

    def _strict_there(self, xs, native, hi, scale: float) -> tuple[bool, str]:
        """Whether the scaled draw is judged at the usual bounds, and how the verdict says so.
        Float32 data at ``"highest"``, and any draw of the usual magnitudes: yes. Products
        rounded below float32 (TF32 where the user allowed it, half-precision data) err in
        proportion to the values, and a softmax turns that into another answer on logits 4096
        times as large. There the draw is judged at the bounds only where the task is not so
        sensitive: its float64 answer, with every floating input moved by a relative amount of
        that rounding's size, stays within a quarter of the bound (a tanh, an activation, a
        norm); else only NaN and inf are judged, the overflows the draw is for (an attention's
        softmax over those logits)."""
        floats = [t for t in tensor_leaves(self.draws[0]) if t.is_floating_point()]
        if abs(scale) == 1.0 or (self.compare_at == "highest" and all(
                t.dtype in (torch.float32, torch.float64) for t in floats)):
            return True, "checked"
        try:
            moved = self.reference(_nudged(xs, self.compare_at), hi=True)[1]
        except Exception:  # noqa: BLE001 - judged for NaN and inf only
            moved = None
        if moved is not None:
            best = in_dtypes_of(flatten(native), flatten(hi))
            got = [m.to(b.dtype) if isinstance(m, torch.Tensor) and isinstance(b, torch.Tensor)
                   and m.shape == b.shape else m for b, m in zip(best, flatten(moved))]
            tol = min((tolerances(t.dtype, self.compare_at)[0] for t in tensor_leaves(native)
                       if t.is_floating_point()), default=None)
            reason, _, stats = compare(best, got, flatten(hi), precision=self.compare_at,
                                       tails=False)
            if tol is not None and reason == "ok" and stats["rel_error"] <= tol / 4:
                return True, ("checked (its answer there is not sensitive to products rounded "
                              "below float32)")
        return False, "checked for NaN and inf only (products below float32)"

    def evolution_check(self) -> None:
        """A task that keeps state: the draws in sequence, each side carrying its state from
        call to call as it would when served."""
        self.ref_state.restore()
        self.hi_state.restore()
        n = len(self.draws)
        # one autograd mode throughout: what is checked here is the state carried forward
        calls = [self.spec(reuse=f"d{k}", restore=(k == 0), grad="no_grad") for k in range(n)]
        self.stateful = False   # no putting back between the reference's calls either
        try:
            exps = [self.reference(self.draws[k]) for k in range(n)]
        finally:
            self.stateful = True
        _, outs, _ = self.run_calls(calls, [f"state carried across calls: draw {k} in sequence"
                                            for k in range(n)],
                                    self.ref_specs_like)
        for k, (exp, got) in enumerate(zip(exps, outs)):
            reason, detail, stats = self.cmp(exp[0], got, exp[1])
            if reason != "ok":
                raise Reject(reason, f"state carried across calls: draw {k} in sequence: {detail}",
                             **stats)
        self.ref_state.restore()
        self.hi_state.restore()

    # -- timing -------------------------------------------------------------------------------
    def _time(self) -> Timing:
        """Timing, with the clock's cross-check: a run whose reported times do not account for
        the wall time is timed once more (a host busy with other work can make one run look so)
        before it counts as tampering."""
        t0 = self._clock()
        try:
            timing = self._time_run()
        except Reject as r:
            if r.verdict.reason != "timer_tampering" or "judge's clock" not in r.verdict.detail:
                raise
            timing = self._time_run()
            timing.extra["timed_again"] = r.verdict.detail
        self.guard("after timing")
        self.refill_check("after timing")
        self.phases["time_s"] = round(self._since(t0) - self.phases.get("time_ref_s", 0.0), 3)
        return timing

    def _time_run(self) -> Timing:
        budget = float(self.req.get("time_budget_s", 2.0))
        min_reps, reps, rel_spread = 10, 200, 0.05
        cand_ms, ref_ms, host = [], [], {}
        batches: list[dict] = []
        rng = random.SystemRandom()
        full_checks = switches = 0
        ref_s = 0.0
        others = OthersClock(self.worker.proc.pid if self.worker.proc else None)
        per_call_s = self.ref_call_s
        warm = True
        deadline = time.perf_counter() + budget
        # the candidate's processes run during their own batches only: stopped while the
        # reference is timed and while their outputs are read (freeze.py)
        held = freeze.Freezer(self.worker.proc.pid if self.worker.proc else None, host)
        with self._reference_runner() as (ref_runner, ref_slots), self.lock.exclusive(), \
                quiet_cpu(host), held:
            held.stop()
            while True:
                # a batch about a twelfth of the budget long, and at least 30 ms where calls
                # are quick, so that a host's hiccup (a late wake-up) is small beside it
                fit = int(max(budget / 12, 0.03) / max(per_call_s, 1e-6))
                size = 3 if warm else max(MIN_TIMED_BATCH, min(self.batch, fit))
                calls = self._timed_calls(size, rng)
                whats = [f"timed call {len(cand_ms) + i}" for i in range(size)]
                t_r = time.perf_counter()
                # a stateful reference's state before the batch (the batch carries it on)
                at_start = ModuleState(self.ref) if self.stateful else None
                ref_rep = ref_runner.run(calls)
                w_r = time.perf_counter() - t_r
                per_call_s = w_r / size   # the reference's, with the harness around it
                if ref_rep.get("error"):
                    e = ref_rep["error"]
                    raise RuntimeError(f"the reference failed while timed: {e.get('text')}")
                held.cont()
                others.start()
                reply, w_c = self.worker.batch(calls, self.call_timeout(size, w_r),
                                               f"in {whats[0]}")
                busy_s = others.others_s()
                held.stop()
                recs = self.batch_facts(reply, whats, self.ref_specs_like)
                self.outputs_kept_apart(reply, recs, whats)
                switches += int(reply.get("involuntary_switches") or 0) if not warm else 0
                picked = set(range(size)) if warm else set(
                    rng.sample(range(size), max(1, size // 8)))
                self._check_timed(calls, recs, whats, ref_slots, picked, at_start)
                full_checks += len(picked)
                s_c = [r["ms"] for r in recs]
                s_r = [r["ms"] for r in ref_rep["calls"]]
                ref_s += w_r
                if not warm:
                    cand_ms += s_c
                    ref_ms += s_r
                    batches.append({"W": w_c, "S": sum(s_c) / 1e3, "n": size,
                                    "M": sorted(s_c)[len(s_c) // 2] / 1e3,
                                    "O": max(0.0, w_r - sum(s_r) / 1e3),
                                    "ipc": self.worker.wall_ping, "busy": busy_s})
                warm = False
                n = len(cand_ms)
                if n >= min_reps and len(batches) >= MIN_TIMED_BATCHES:
                    med, iqr = _quartiles(cand_ms)
                    if ((med > 0 and iqr <= rel_spread * med and n >= 2 * min_reps) or
                            n >= reps or time.perf_counter() > deadline) and \
                            self._sequence_long_enough(n, deadline + 4 * budget):
                        break
        median, spread = _quartiles(cand_ms)
        extra = {"min_ms": min(cand_ms), "mean_ms": sum(cand_ms) / len(cand_ms),
                 "checked_in_full": full_checks, "checked_sampled": len(cand_ms),
                 "clock": "judge-cross-checked", "involuntary_switches": switches,
                 "judge_switches": host.get("involuntary_switches", 0),
                 **{k: v for k, v in host.items() if k != "involuntary_switches"}}
        median = self._cross_check(median, batches, extra)
        ref_med, ref_spread = _quartiles(ref_ms)
        self.phases["time_ref_s"] = round(self.phases.get("time_ref_s", 0.0) + ref_s, 3)
        if self.req.get("pair_reference"):
            extra.update(paired_ref_ms=ref_med, paired_ref_spread_ms=ref_spread,
                         paired_ref_n=len(ref_ms),
                         paired_ref_switches=host.get("involuntary_switches", 0))
        else:
            extra["reference_ms"] = ref_med
        cuda = self.device.startswith("cuda")
        return Timing(median_ms=median, spread_ms=spread, n=len(cand_ms),
                      method="cuda_events_l2flush" if cuda else "cpu_perf_counter", extra=extra)

    def _sequence_long_enough(self, n: int, until: float) -> bool:
        """A stateful task's timing run is one sequence of calls carrying the state: at least
        a length drawn once, in secret, between MAX_BATCH and three times that (past ``until``,
        what it has), so that a candidate updating its state for so many calls after it was put
        back, and answering from a frozen state after that, meets a checked call in the run."""
        if not self.stateful:
            return True
        if self._sequence_len is None:
            self._sequence_len = random.SystemRandom().randint(MAX_BATCH, 3 * MAX_BATCH)
        return n >= self._sequence_len or time.perf_counter() > until

    def _timed_calls(self, size: int, rng, run: bool = True) -> list[dict]:
        """A batch of timed calls: each a new draw, or (about one in two) the previous call's
        buffers refilled in part with a new draw. One call's outputs, at random, are held by the
        worker for the next batches (``_may_hold``, ``outputs_kept_apart``). ``run=False``: a
        batch of the harness's calibration on the reference, held like any timed batch (its
        cost is what the calibration measures) but leaving the timing run's own bookkeeping
        (its one hold of large outputs, a stateful task's sequence) to the candidate's run."""
        calls = []
        for i in range(size):
            if i and rng.random() < 0.5:
                calls.append(self.spec(refill=f"_t{i - 1}", seed=_fresh_seed(),
                                       partial=_fresh_seed(), keep_as=f"_t{i}"))
            else:
                calls.append(self.spec(seed=_fresh_seed(), keep_as=f"_t{i}"))
        if self.stateful and run:
            # State put back before the timing run's first call only, then carried through all
            # its batches on both sides, as a server carries it: every timed call is checked
            # against the reference's call at the same point of the sequence, so a candidate that
            # tells the putting back (a tensor's identity) and updates its state for so many
            # calls after it only is refused however long a batch is. One autograd mode (state
            # made under inference mode may not be updated outside it, by the reference either).
            first = not self._sequence_started
            self._sequence_started = True
            grad = self._sequence_grad = self._sequence_grad or calls[0]["grad"]
            for i, c in enumerate(calls):
                c["restore"], c["grad"] = first and i == 0, grad
        if self._may_hold(run):
            calls[rng.randrange(size)]["hold"] = self.hold_outputs
        if self._may_hold_inputs():
            # one call whose inputs the harness lets go of after it (the next call does not
            # refill them): kept by the worker, they must stay as the caller gave them
            free = [i for i in range(size) if i + 1 == size or "refill" not in calls[i + 1]]
            calls[rng.choice(free)]["hold_inputs"] = True
        return calls

    def _may_hold_inputs(self) -> bool:
        """Whether the worker may hold a call's inputs past it (``calls.Runner``'s
        ``held_inputs``): within ``held_bytes()``, and not for a task whose state is put back."""
        if getattr(self, "_hold_inputs", None) is None:
            size = sum(nbytes(t) for t in tensor_leaves(self.draws[0]))
            self._hold_inputs = not self.stateful and (HELD_OUTPUTS + HELD_FIRST) * size \
                <= held_bytes()
        return self._hold_inputs

    def _may_hold(self, run: bool = True) -> bool:
        """Whether the worker may hold outputs (one call of every batch, the last HELD_OUTPUTS
        of them): within ``held_bytes()``, and only where the reference's calls give each its own
        memory. Outputs too large for that are held for one call only, the first batch's, to
        the end of the run: a ring of output buffers handed out again after as many calls as
        it has buffers (allocations skipped, each result overwritten under a caller that kept
        it) still comes round to that one."""
        if self.hold_outputs is None:
            spared = self.ref_shared_outputs()
            fresh = [i for i, s in enumerate(self.specs) if s and i not in spared]
            size = sum(self.specs[i]["nbytes"] for i in fresh)
            limit = held_bytes()
            self.hold_once = (HELD_OUTPUTS + HELD_FIRST) * size > limit
            ok = not self.stateful and size <= limit
            self.hold_outputs = fresh if ok else []
        if self.hold_once and self.hold_outputs and run:
            if self._held_once:
                return False   # held once already
            self._held_once = True
        return bool(self.hold_outputs)

    def _timed_inputs(self, calls: list[dict], k: int) -> list:
        """The inputs of timed call ``k``, made again here."""
        c = calls[k]
        if "refill" not in c:
            return self.draw(c["seed"])
        base, fresh = self._timed_inputs(calls, k - 1), self.draw(c["seed"])
        memo: dict = {}   # one tensor given as two inputs is refilled once, and stays one
        return [memo.setdefault(id(b), _refilled(b, f, c["partial"])) if isinstance(
            b, torch.Tensor) else _refilled(b, f, c["partial"]) for b, f in zip(base, fresh)]

    def _cross_check(self, median: float, batches: list[dict], extra: dict) -> float:
        """The candidate's reported times against this process's clock. The wall time of a
        timed batch, less the harness's own cost around each call (measured on the reference's
        batch, the same code) and the pipe's round trip, is what its calls took; the reported
        times (their sum) must account for it. Judged on the median batch, so that a batch the
        host disturbed does not decide: under 80% and the median is scaled up in proportion, so
        times edited down buy at most 1.25x; under 35% with the harness's cost taken at its
        drift's top (HARNESS_DRIFT above its estimate) is tampering. A drift alone (the host's)
        so makes an honest candidate slower by the judge's clock, never refused.

        A batch during which other processes took more than a quarter of a core
        (``host_load.OthersClock``) says nothing either way and is left out; where every batch
        was so, the judge's own figure per call stands in for the reported median when it is
        the larger, and where one alone was not, it is not refused on that one. The harness's
        own candidates (baselines, built-in rewrites) write no times of their own: their
        figures are recorded, never judged."""
        ratios, drifted, calls_total, n, busy = [], [], 0.0, 0, 0
        small = []
        # the harness's cost per call, as the median of the reference's batches (one batch's
        # own figure moves by a third from one batch to the next on a small host)
        per_call = sorted(b["O"] / b["n"] for b in batches)
        o_call = per_call[len(per_call) // 2] if per_call else 0.0
        # in the candidate's process, as measured there on the reference (never below this one's)
        ratio = getattr(self, "harness_ratio", None)
        if ratio is not None:
            extra["harness_ratio"] = round(ratio, 3)
            extra["harness_ratios"] = getattr(self, "harness_ratios", None)
            if getattr(self, "harness_busy_rounds", 0):
                extra["harness_busy_rounds"] = self.harness_busy_rounds
            o_call *= max(1.0, ratio)
        elif getattr(self, "harness_unmeasured", None):
            extra["harness_unmeasured"] = self.harness_unmeasured
        for b in batches:
            o = o_call * b["n"]
            calls_s = max(0.0, b["W"] - o - b["ipc"])
            calls_total, n = calls_total + calls_s, n + b["n"]
            if b.get("busy") is not None and b["busy"] > BUSY_SHARE * b["W"]:
                busy += 1
                continue
            # What is reported is the median: times moved from call to call (one call given the
            # batch's whole time) keep the sum and not the median, so the median counts too, at
            # half (honest calls with a slow tail keep their median above half the mean).
            reported = min(b["S"], 2 * b["n"] * b.get("M", b["S"] / b["n"]))
            # A batch whose calls' time is within the harness's noise cannot tell an edit from
            # that noise on its own...
            slack = 0.5 * o + 0.005 + 5e-5 * b["n"]
            if calls_s > slack:
                ratios.append(reported / calls_s)
                left = calls_s - HARNESS_DRIFT * o
                drifted.append(reported / left if left > 0 else 1.0)
            else:
                small.append((calls_s, slack, reported, o))
        if small:
            # ...the batches together can: their noise adds up as its square root, their time
            # as a sum, so work hidden below the harness's noise in every batch (done while the
            # harness prepares the calls) shows over a whole run. Each such batch counts at the
            # pooled ratio where the pool decides, else as accounting for its time.
            noise = sum(sl for _, sl, _, _ in small) / len(small) ** 0.5
            tot = sum(c for c, _, _, _ in small)
            rep = sum(r for _, _, r, _ in small)
            left = tot - HARNESS_DRIFT * sum(o for _, _, _, o in small)
            ratios += [rep / tot if tot > noise else 1.0] * len(small)
            drifted += [rep / left if left > noise else 1.0] * len(small)
        judge_ms = calls_total / n * 1e3 if n else None
        if judge_ms is not None:
            extra["judge_ms"] = judge_ms
            # what the harness was taken to cost per call in the worker, and what the calls
            # reported: an honest candidate's drift of the harness reads off these
            # (benchmarks/harness_drift.py)
            extra["harness_ms"] = o_call * 1e3
            extra["reported_mean_ms"] = sum(b["S"] for b in batches) / n * 1e3
        if busy:
            extra["host_busy_batches"] = busy
        if not ratios:
            if busy and busy == len(batches) and not self.trusted and judge_ms and judge_ms > median:
                extra["clock"] = "judge (host busy: the reported times could not be checked)"
                return judge_ms
            return median
        ratios.sort()
        drifted.sort()
        explained = min(1.0, ratios[len(ratios) // 2])
        extra["drifted"] = [round(d, 3) for d in drifted]
        extra["explained"] = round(explained, 3)
        if self.trusted:
            return median
        # A refusal takes two quiet batches at least: on a host busy with other work, the one
        # batch the others' accounting let through can still have waited (its ticks are 10 ms)
        # and stands alone; with fewer, the median is scaled up below as for any short share
        if min(1.0, drifted[len(drifted) // 2]) < 0.35 and len(batches) - busy >= 2:
            s = sum(b["S"] for b in batches)
            raise Reject("timer_tampering", (
                f"its own timings add up to {s * 1e3:.3f} ms of the {calls_total * 1e3:.3f} ms "
                f"its {n} timed calls took on the judge's clock (the harness's own "
                f"{o_call * n * 1e3:.3f} ms taken off, {len(small)} of {len(batches)} batches "
                f"within its noise, {busy} left out as the host's busy; judged on the batches' "
                f"reported share of their time less the harness's at its drift's top: "
                f"{', '.join(f'{d:.2f}' for d in drifted)})"))
        if explained < 0.8:
            extra["scaled_by_judge"] = round(0.8 / explained, 3)
            return median * 0.8 / explained
        return median

    def _check_timed(self, calls, recs, whats, ref_slots, picked, at_start=None) -> None:
        """Every timed call: what the worker saw, and its outputs at positions drawn now against
        the reference's answer to the same seed; the ``picked`` calls in full against float64."""
        like = self.ref_specs_like
        gen = torch.Generator().manual_seed(_fresh_seed())
        suspects: dict[int, int] = {}
        for k in range(len(recs)):
            for i, s in enumerate(self.specs):
                if s is None or not recs[k]["outputs"][i].get("copied"):
                    continue
                c = self.worker.slots.view(k, i)
                # read while the candidate's processes are stopped (_time_run)
                self.handed_over(c, recs[k]["outputs"][i], whats[k], i)
                dt = getattr(torch, s["dtype"])
                if not dt.is_floating_point:
                    continue
                c = c.reshape(-1)
                r = ref_slots.view(k, i).reshape(-1)
                if not c.numel():
                    continue
                pos = torch.randint(0, c.numel(), (min(SAMPLED, c.numel()),), generator=gen)
                cv, rv = c[pos].double(), r[pos].double()
                bad_nan = (~torch.isfinite(cv)) & torch.isfinite(rv)
                fin = torch.isfinite(cv) & torch.isfinite(rv)
                rms = float(rv[fin].square().mean().sqrt()) if bool(fin.any()) else 0.0
                elem = tolerances(dt, self.compare_at)[1]
                bound = 4 * elem * (rms + rv.abs()) + 4 * SLACK * (
                    self.native_abs[i] if i < len(self.native_abs) else 0.0)
                if bool(bad_nan.any()) or bool(((cv - rv).abs() > bound)[fin].any()):
                    # a screen only (its slack is draw 0's, its scale the sampled values'): the
                    # call is judged in full against float64, as a picked one is
                    suspects[k] = i
        picked = set(picked) | set(suspects)
        expected = self._timed_sequence(calls, picked, at_start) if self.stateful else {}
        for k in sorted(picked):
            exp = expected.pop(k) if self.stateful else self.reference(self._timed_inputs(calls, k))
            got = self._outputs(k, recs[k], like, whats[k])
            reason, detail, stats = self.cmp(exp[0], got, exp[1])
            if reason != "ok":
                raise Reject("stale_output" if reason == "mismatch" else reason,
                             f"during timing, {whats[k]}: {detail}", **stats)


    def _timed_sequence(self, calls, picked, at_start) -> dict:
        """A stateful task's answers (native and float64) to the ``picked`` calls of a timed
        batch: the reference run over all the batch's calls in order, from its state before
        the batch (``at_start``; the state at construction for the run's first batch), the way
        ``_timed_calls`` has both sides carry it. The float64 copy carries its own state from
        batch to batch, as the native one does."""
        if calls[0].get("restore"):
            self.ref_state.restore()
            self.hi_state.restore()
        else:
            at_start.restore()
        self.stateful = False   # no putting back between the calls
        found = {}
        try:
            for k in range(len(calls)):   # every call moves the state, picked or not
                exp = self.reference(self._timed_inputs(calls, k))
                if k in picked:
                    found[k] = exp
            return found
        finally:
            self.stateful = True


def _nudged(xs, precision: str):
    """``xs`` with every floating value moved by a random relative amount up to the rounding of
    the products the precision allows (TF32 at ``"high"``, bfloat16 at ``"medium"``; a
    half-precision input's own), as a product rounded so moves what it is given."""
    gen = torch.Generator().manual_seed(_fresh_seed())
    eps32 = {"high": 2.0 ** -11, "medium": 2.0 ** -8}.get(precision, 2.0 ** -24)

    def one(t):
        if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()):
            return t
        eps = eps32 if t.dtype in (torch.float32, torch.float64) else torch.finfo(t.dtype).eps / 2
        u = torch.rand(t.shape, generator=gen, dtype=torch.float64).to(t.device) * 2 - 1
        return (t.double() * (1 + eps * u)).to(t.dtype)
    return [one(x) if isinstance(x, torch.Tensor) else
            type(x)(one(y) for y in x) if type(x) in (list, tuple) else x for x in xs]


def _refilled(b, f, partial):
    """What ``calls.refill_tree`` leaves in input ``b`` refilled in part from ``f``: an input
    whose elements share memory keeps its values where the mixed draw has another layout; lists
    and tuples are refilled tensor by tensor, and anything else stays as it was."""
    if type(b) in (list, tuple) and type(f) is type(b) and len(b) == len(f):
        return type(b)(_refilled(x, y, partial) for x, y in zip(b, f))
    if not (isinstance(b, torch.Tensor) and isinstance(f, torch.Tensor) and b.shape == f.shape):
        return b
    new = mix(b, f, partial)
    if torch._debug_has_internal_overlap(b) == 1 and new.stride() != b.stride():
        return b
    return new


def _quartiles(xs: list[float]) -> tuple[float, float]:
    import statistics
    if not xs:
        return 0.0, 0.0
    if len(xs) < 4:
        return statistics.median(xs), max(xs) - min(xs)
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[1], q[2] - q[0]


def _load_real_inputs(wd: Path):
    from ..harness import real_inputs
    return real_inputs.load(str(wd / REAL_INPUTS_FILE))


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
    faulthandler.enable()
    wd = Path(sys.argv[1])
    _write_result(wd, {})   # reads the nonce the parent sent
    req = json.loads((wd / REQUEST_FILE).read_text())
    j = Judge(wd, req)
    try:
        result = j.run()
    except Reject as r:
        result = {"verdict": r.verdict.to_json()}
    except LockTimeout as e:
        result = {"verdict": Verdict.reject("timeout", str(e)).to_json()}
    except Exception as e:  # noqa: BLE001
        reason, detail = classify_exception(e)
        if reason == "memory":   # the device was full (other jobs): the search retries alone
            result = {"verdict": Verdict.reject("memory", f"the judge ran out of memory: {detail}")
                      .to_json()}
        else:
            result = {"verdict": Verdict.reject(
                "error", f"the judge failed: {detail}\n{traceback.format_exc()[-1500:]}").to_json()}
    finally:
        if j.worker is not None:
            j.worker.close()
    result.setdefault("timing", None)
    result["build_dir"] = j.build_dir
    result["untrusted"] = not getattr(j, "trusted", False)
    j.phases["lock_wait_s"] = round(j.lock.waited_s, 3)
    result["phases"] = j.phases
    _write_result(wd, result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
