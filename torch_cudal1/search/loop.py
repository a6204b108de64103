"""The search: baselines first, then engine rounds; every candidate verified and timed.

Round r shows the engine the whole history (with measured speedups and rejection reasons), which
is what makes the loop contrastive. The winner is the fastest verified candidate, or the best
baseline when nothing beats it by more than the measured noise.
"""
from __future__ import annotations

import math
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import engines
from ..contracts import Attempt, Candidate, Verdict
from ..engines.baselines import baseline_candidate
from ..engines.base import EngineError, SearchContext
from ..log import logger
from ..options import Options
from ..origin import Origin
from ..task import Task
from ..verify import evaluate, prestart_children
from .noise import beats, disturbed, retime_unsound
from .stability import NOISY_RATIO, HostNoise, confirm_baselines, faster_of_two, paired_drift

# An engine candidate's child gets its own limit (``verify_timeout_s``) or what is left of the
# search's budget, whichever is less, but at least this: the budget bounds the search's wall
# time, not only when its candidates start (a round's candidates verified in parallel, each with
# the full limit, would otherwise run a search to twice its budget). Baselines keep the full limit.
MIN_VERIFY_S = 60.0


def pipelines(device: str) -> bool:
    """Whether whole verifications (build, checks and timing) of several candidates may run at
    once on ``device``: on a GPU, where the device lock keeps each timing alone on the device
    while the others start their interpreters, build and verify, so one candidate's host work
    hides behind another's device time. Not on a CPU, where that host work is what a timing
    measures, nor with the device lock off, where timings would share the device."""
    from ..bench.device_lock import lock_dir
    return not str(device).startswith("cpu") and lock_dir() is not None


class SearchError(RuntimeError):
    """The search could not produce any verified implementation (the reference itself failed).
    ``of_the_graph``: every baseline was rejected for a reason that lies in the graph, so another
    search of it would fail the same way (``cache/failures.py``)."""

    def __init__(self, message: str, of_the_graph: bool = False):
        super().__init__(message)
        self.of_the_graph = of_the_graph


@dataclass
class SearchResult:
    key: str
    winner: Attempt
    attempts: list[Attempt]
    eager_ms: float | None
    inductor_ms: float | None
    rounds_run: int
    seconds: float
    complete: bool = True            # False when the engine failed mid-search (do not cache)
    stop_reason: str = ""
    workroot: Path | None = None     # per-candidate work dirs (build artefacts); caller cleans up
    keep_workdirs: bool = False      # the ``keep_workdirs`` option: cleanup() leaves them
    winner_dir: Path | None = None
    host_noise: HostNoise | None = None   # the baselines' drift between their two timings

    @property
    def candidates_tried(self) -> int:
        return sum(1 for a in self.attempts if not a.candidate.identity.is_baseline)

    @property
    def candidates_accepted(self) -> int:
        return sum(1 for a in self.attempts
                   if a.verdict.accepted and not a.candidate.identity.is_baseline)

    def summary(self) -> dict:
        w = self.winner
        return {"key": self.key, "winner_origin": w.candidate.origin,
                "winner_ms": w.timing.median_ms if w.timing else None,
                "eager_ms": self.eager_ms, "inductor_ms": self.inductor_ms,
                "speedup_vs_eager": w.speedup_vs_eager, "speedup_vs_inductor": w.speedup_vs_inductor,
                "paired_speedup_vs_eager": w.timing.paired_speedup
                if w.timing and not (self.host_noise and not self.host_noise.decided) else None,
                "winner_at_s": w.at_s,
                "rounds_run": self.rounds_run, "candidates_tried": self.candidates_tried,
                "candidates_accepted": self.candidates_accepted, "seconds": round(self.seconds, 3),
                "complete": self.complete, "stop_reason": self.stop_reason,
                "host_noise": self.host_noise.to_json() if self.host_noise else None}

    def cleanup(self) -> None:
        if self.workroot is None:
            return
        if self.keep_workdirs:
            logger.info("verification work dirs of %s kept in %s (keep_workdirs)", self.key,
                        self.workroot)
            return
        shutil.rmtree(self.workroot, ignore_errors=True)


def device_info(device: str) -> dict:
    import torch
    if device.startswith("cuda") and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.device(device))
        return {"name": p.name, "capability": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                "memory_gb": round(p.total_memory / 2**30, 1),
                "l2_mb": round(getattr(p, "L2_cache_size", 0) / 2**20, 1)}
    import os
    import platform
    return {"name": platform.processor() or platform.machine(), "cores": os.cpu_count()}


def _ends(detail: str, head: int = 160, tail: int = 400) -> str:
    """A long detail's start and end: an error's last line (after a traceback) says what failed."""
    return detail if len(detail) <= head + tail + 5 else f"{detail[:head]} ... {detail[-tail:]}"


def _fmt_line(a: Attempt) -> str:
    """One attempt as measured: its time, and its ratio to eager only where eager was timed in
    its own child right after it (``pair_reference``); ratios across children are claimed once
    the baselines they rest on are confirmed (``stability``), in the winner's line."""
    v = a.verdict
    status = "accepted" if v.accepted else f"rejected ({v.reason})"
    t = f"{a.timing.median_ms:9.4f} ms ±{a.timing.spread_ms:.4f}" if a.timing else " " * 22
    paired = a.timing.paired_speedup if a.timing else None
    c = a.candidate
    where = "baseline" if c.identity.is_baseline else f"r{c.round}s{c.sample}"
    line = f"{where:8} {c.origin:34} {status:28} {t}" + (f" (x{paired:.2f} paired)" if paired else "")
    if not v.accepted and v.detail:
        line += f"  {v.detail.splitlines()[0][:160]}"
    return line.rstrip()


def run_search(task: Task, options: Options, device: str = "cpu", *, key: str = "",
               engine: engines.Engine | None = None, progress=None) -> SearchResult:
    """Search for the fastest verified implementation of ``task`` on ``device``."""
    say = progress or (lambda line: logger.info(line) if options.progress else None)
    start = time.monotonic()
    precision = options.verify_precision()
    from ..verify import os_sandbox
    if options.strict and os_sandbox.mode() != "none" and not os_sandbox.active():
        raise SearchError("strict: candidate code would run without an OS sandbox ("
                          + (os_sandbox.check() or "off") + "); install bubblewrap, or set "
                          "CUDAL1_SANDBOX=none where the host is itself the sandbox")
    if len(options.baseline_names()) + options.rounds > 1:
        prestart_children()   # the first baseline's child forked too, no second import beside it
    keep = options.keep_workdirs
    if keep:
        Path(keep).expanduser().mkdir(parents=True, exist_ok=True)
    workroot = Path(tempfile.mkdtemp(prefix="cudal1-search-",
                                     dir=str(Path(keep).expanduser()) if keep else None))
    attempts: list[Attempt] = []
    dirs: dict[int, Path] = {}
    refs: dict[str, float] = {}
    runs = iter(range(10**9))   # work dir numbers, handed out before a candidate starts
    pipelined = options.pipeline and pipelines(device) and options.parallel_builds > 1

    def budget_timeout() -> float:
        left = options.time_budget_s - (time.monotonic() - start)
        return max(MIN_VERIFY_S, min(options.verify_timeout_s, left))

    def cut(verdict: Verdict, timeout_s: float) -> Verdict:
        """A timeout the budget set, not the candidate's own limit, says so."""
        if verdict.reason == "timeout" and timeout_s < options.verify_timeout_s:
            verdict.detail += " (what was left of the search's time budget)"
        return verdict

    def preverify(cands: list[Candidate]) -> dict[int, Verdict]:
        """Build and verify a round's candidates in parallel child processes (no timing), so
        that builds use the CPU cores while timing stays one candidate at a time. One input
        draw each: this only sorts out the wrong ones early; every candidate that passes is
        verified in full (``trials`` draws) again when it is timed."""
        todo = [c for c in cands if not c.meta.get("failed")]
        workers = min(options.parallel_builds, len(todo))
        if workers < 2:
            return {}

        timeout_s = budget_timeout()

        def check(item):
            i, cand = item
            verdict, _ = evaluate(task, cand, device=device, trials=1,
                                  timeout_s=timeout_s, time_it=False, precision=precision,
                                  workdir=str(workroot / f"pre{len(attempts):03d}_{i}"),
                                  capture_limit_mb=options.capture_limit_mb)
            return id(cand), cut(verdict, timeout_s)
        with ThreadPoolExecutor(workers, thread_name_prefix="cudal1-build") as pool:
            return dict(pool.map(check, enumerate(todo)))

    def since_start() -> float:
        # in whole ms, rounded down: never later than the search's own seconds
        return math.floor((time.monotonic() - start) * 1000) / 1000

    def record_attempt(a: Attempt) -> None:
        if a.at_s is None:   # a pipelined attempt keeps when its own verdict was in
            a.at_s = since_start()
        attempts.append(a)

    def speedups(a: Attempt) -> None:
        if a.timing:
            a.speedup_vs_eager = refs.get("eager") and refs["eager"] / a.timing.median_ms
            a.speedup_vs_inductor = refs.get("inductor") and refs["inductor"] / a.timing.median_ms

    def run_one(cand: Candidate, record: bool = True, timeout_s: float | None = None,
                deferred: bool = False) -> Attempt:
        wd = workroot / (f"c{next(runs):03d}" if record else f"again{next(runs):03d}")
        t0 = time.monotonic()
        timeout_s = timeout_s or options.verify_timeout_s
        verdict, timing = evaluate(task, cand, device=device, trials=options.trials,
                                   timeout_s=timeout_s, workdir=str(wd), precision=precision,
                                   capture_limit_mb=options.capture_limit_mb,
                                   pair_reference=options.pairs_reference(device))
        verdict = cut(verdict, timeout_s)
        a = Attempt(cand, verdict, timing if verdict.accepted else None,
                    seconds=time.monotonic() - t0)
        if not record:
            shutil.rmtree(wd, ignore_errors=True)
            return a
        dirs[id(a)] = wd
        if deferred:   # recorded by run_all, in the candidates' order
            a.at_s = since_start()
            return a
        speedups(a)
        record_attempt(a)
        return a

    def run_all(cands: list[Candidate], *, budgeted: bool = True,
                record: bool = True) -> list[Attempt | None]:
        """``run_one`` for each of ``cands``; where ``pipelined``, up to ``parallel_builds`` at
        once. A candidate whose turn comes after the time budget ran out is not started (None).
        Recorded in the candidates' order, each with the time its own verdict was in. One out
        of device memory beside its siblings is verified again alone: that says nothing of it."""
        def one(cand):
            if budgeted and time.monotonic() - start > options.time_budget_s:
                return None
            return run_one(cand, record=record, deferred=record,
                           timeout_s=budget_timeout() if budgeted else None)
        crowd = pipelined and len(cands) > 1
        if crowd:
            with ThreadPoolExecutor(min(options.parallel_builds, len(cands)),
                                    thread_name_prefix="cudal1-candidate") as pool:
                out = list(pool.map(one, cands))
        else:
            out = [one(c) for c in cands]
        for k, (cand, a) in enumerate(zip(cands, out)):
            if crowd and a is not None and a.verdict.reason == "memory":
                out[k] = a = run_one(cand, record=record, deferred=record)
            if a is not None and record:
                speedups(a)
                record_attempt(a)
        return out

    say(f"searching {task.name} on {device} (key {key or '-'}): baselines "
        f"{', '.join(options.baseline_names())}, engine {options.engine}, "
        f"{options.rounds} rounds x {options.samples} samples")
    for a in run_all([baseline_candidate(task, n) for n in options.baseline_names()],
                     budgeted=False):
        name = a.candidate.identity.base
        if a.timing:
            refs[name] = a.timing.median_ms
            if name in ("eager", "inductor"):   # fill in speedups against itself
                a.speedup_vs_eager = refs.get("eager") and refs["eager"] / a.timing.median_ms
                a.speedup_vs_inductor = refs.get("inductor") and refs["inductor"] / a.timing.median_ms
        say(_fmt_line(a))
    for a in attempts:   # speedups of the eager baseline against inductor, measured after it
        if a.timing and a.speedup_vs_inductor is None and "inductor" in refs:
            a.speedup_vs_inductor = refs["inductor"] / a.timing.median_ms
    base_ok = [a for a in attempts if a.verdict.accepted]
    if not base_ok:
        if keep:   # the child logs say why
            logger.info("verification work dirs kept in %s (keep_workdirs)", workroot)
        else:
            shutil.rmtree(workroot, ignore_errors=True)
        hint = ""
        if any(a.candidate.identity == Origin.baseline("eager")
               and a.verdict.reason == "nondeterministic"
               for a in attempts):
            # The reference itself answers the same input differently on a second call: state it
            # keeps across calls (a hidden state reassigned in forward) or randomness.
            hint = (" (the reference itself gives two answers to one input: it keeps state across "
                    "calls where the verifier cannot put it back — only buffers and tensor "
                    "attributes are — or draws random numbers; torch.compile's path lifts module "
                    "state into inputs and outputs)")
        from ..cache.failures import OF_THE_GRAPH
        raise SearchError("no baseline passed verification" + hint + ": " + "; ".join(
            f"{a.candidate.origin}: {a.verdict.reason} {_ends(a.verdict.detail)}" for a in attempts),
            of_the_graph=bool(attempts) and all(a.verdict.reason in OF_THE_GRAPH for a in attempts))

    complete, stop_reason, rounds_run = True, "rounds exhausted", 0
    best_ms = min(a.timing.median_ms for a in base_ok)
    stale = 0
    own_engine = engine is None
    try:
        if options.rounds > 0 and engine is None:
            engine = engines.create(options)
        for r in range(1, options.rounds + 1):
            if time.monotonic() - start > options.time_budget_s:
                stop_reason = "time budget"
                break
            ctx = SearchContext(device=device, device_info=device_info(device), round=r,
                                samples=options.samples, key=key)
            try:
                cands = engine.propose(task, list(attempts), ctx)
            except EngineError as e:
                # the caller says what follows (a fallback, an exit code) with this cause
                logger.info("engine %s failed in round %d: %s", options.engine, r, e)
                complete, stop_reason = False, f"engine error: {e}"
                break
            rounds_run = r
            if not cands:
                stop_reason = "engine has no new candidates"
                break
            improved = False
            if engine.bounded_by_samples:
                cands = cands[: options.samples]
            for s, cand in enumerate(cands):
                cand.round, cand.sample = r, s
            # Pipelined (a GPU): each candidate verified and timed once, several at a time.
            # Otherwise built and checked in parallel first, then timed one at a time.
            pre = {} if pipelined else preverify(cands)
            ran = dict(zip(map(id, cands), run_all(
                [c for c in cands if not c.meta.get("failed")]))) if pipelined else {}
            for cand in cands:
                early = pre.get(id(cand))
                if early is not None and not early.accepted and early.reason != "memory":
                    # Rejected while building/verifying in parallel: never timed. Out of memory
                    # beside its siblings says nothing of the candidate: it is verified again alone.
                    a = Attempt(cand, early)
                    record_attempt(a)
                    say(_fmt_line(a))
                    continue
                if cand.meta.get("failed"):
                    # An answer without usable code (or a sample whose request failed): recorded
                    # as a rejected attempt with its raw answer, never sent to the verifier.
                    a = Attempt(cand, Verdict.reject(cand.meta.get("failed_reason", "no_model_new"),
                                                     str(cand.meta["failed"])))
                    record_attempt(a)
                    say(_fmt_line(a))
                    continue
                if pipelined:
                    a = ran.get(id(cand))
                    if a is None:   # not started: the time budget ran out
                        break
                else:
                    a = run_one(cand, timeout_s=budget_timeout())
                say(_fmt_line(a))
                if a.timing and a.timing.median_ms < best_ms:
                    best_ms, improved = a.timing.median_ms, True
                if time.monotonic() - start > options.time_budget_s:
                    break
            stale = 0 if improved else stale + 1
            if options.early_stop and stale >= options.early_stop:
                stop_reason = f"no improvement in {stale} rounds"
                break
    finally:
        if own_engine and engine is not None:
            engine.close()

    found = [a for a in attempts if a.verdict.accepted and not a.candidate.identity.is_baseline]
    # on GPUs only: there other processes' kernels share the device between timings (on a CPU
    # the spread is the host's own, and a second inductor compile would double a CPU search)
    settle = base_ok
    if found:
        best = min(found, key=lambda a: a.timing.median_ms)
        # and a disturbed one the disturbance may have cost the lead (it inflated timings up to
        # 2.1 times: DISTURBED_SWITCHES)
        settle = settle + [best] + [a for a in found if a is not best and disturbed(a.timing)
                                    and a.timing.median_ms < 2 * best.timing.median_ms]
    if device != "cpu" and retime_unsound(settle, run_one, say):
        refs.update({a.candidate.identity.base: a.timing.median_ms for a in base_ok})
        for a in attempts:
            speedups(a)
    # Before any speedup is claimed, the baselines it rests on are timed again (stability): a
    # candidate wins only by more than their drift, and where the drift is over the bound and no
    # candidate clears it, nothing is decided: the best baseline serves and nothing is claimed.
    noise = None
    if sum(1 for a in attempts if a.verdict.accepted and a.timing) >= 2:
        # the later children's own timings of the reference, else (or where those drift) each
        # baseline once more in a child of its own
        noise = paired_drift(attempts)
        if noise is None or noise.noisy:
            noise = confirm_baselines(base_ok, run_one, run_all)
    drift = noise.ratio if noise else 1.0
    # a baseline rejected when run again is flaky: the others are preferred
    steady = [a for a in base_ok if "reason" not in a.timing.extra.get("confirmed", {})]
    best_base = min(steady or base_ok, key=faster_of_two)
    winner = best_base
    if found:
        best = min(found, key=lambda a: a.timing.median_ms)
        if beats(best, best_base):
            if faster_of_two(best_base) > drift * best.timing.median_ms:
                winner = best
            else:
                say(f"{best.candidate.origin} is faster than {best_base.candidate.origin} by less "
                    f"than the baselines' own drift (x{drift:.2f}): not declared a win")
    decided = noise is None or not noise.noisy or winner is not best_base
    if noise is not None:
        noise.decided = decided
        if not decided:
            for a in attempts:      # nothing measured under these conditions is claimed
                a.speedup_vs_eager = a.speedup_vs_inductor = None
            say(f"host too noisy to decide: {noise.describe()}, over the x{NOISY_RATIO:.2f} "
                "bound; serving the best baseline, no speedup claimed")
        elif noise.noisy:
            say(f"host noisy ({noise.describe()}), but {winner.candidate.origin} is faster than "
                f"every baseline by more than that")
        elif noise.paired:
            say(f"the reference timed again in the {noise.paired} children after eager's: within "
                f"x{noise.ratio:.2f} of eager's first timing (bound x{NOISY_RATIO:.2f})")
        else:
            say(f"baselines timed again after the candidates: within x{noise.ratio:.2f} of their "
                f"first timings (bound x{NOISY_RATIO:.2f})")
    result = SearchResult(key=key, winner=winner, attempts=attempts, eager_ms=refs.get("eager"),
                          inductor_ms=refs.get("inductor"), rounds_run=rounds_run,
                          seconds=time.monotonic() - start, complete=complete,
                          stop_reason=stop_reason, workroot=workroot, winner_dir=dirs[id(winner)],
                          keep_workdirs=bool(keep), host_noise=noise)
    claims = decided
    paired = winner.timing.paired_speedup if claims else None
    # a baseline timed twice (stability) is as fast as the faster of its timings
    say(f"winner: {winner.candidate.origin} {faster_of_two(winner):.4f} ms"
        + (f", x{winner.speedup_vs_eager:.2f} over eager" if winner.speedup_vs_eager else "")
        + (f" (x{paired:.2f} with eager timed in the winner's child)" if paired else "")
        + (f", x{winner.speedup_vs_inductor:.2f} over inductor" if winner.speedup_vs_inductor else "")
        + ("" if claims else ", no speedup claimed (host too noisy)")
        + f" ({result.candidates_tried} candidates tried, {result.candidates_accepted} accepted, "
          f"found at {winner.at_s or 0:.1f} s of {result.seconds:.1f} s; stop: {stop_reason})")
    return result
