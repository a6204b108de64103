"""The thread the candidate's code runs in, apart from the thread of the harness's loop.

The loop (``worker._serve``) holds what the judge relies on: the key that tags its replies, the
reply writer, the runner whose facts about each call the judge reads. Code that holds a frame
can walk ``f_back`` to every frame under it on its own thread's stack, and a library function
that does the walk for the candidate (TorchScript's ``createResolutionCallbackFromFrame(k)``
walks k frames itself) cannot be told apart from a library's own use by the audit hook. So the
loop runs in a thread of its own and hands every piece of work that runs candidate code (its
import, its construction, each call, reading the settings it may have changed) to this one, the
worker's main thread (signal handlers run there, as in a serving process). The frames under the
candidate's are then this module's loop and the job's, which hold the job's own arguments and
nothing of the harness's. From one thread, Python reaches another's frames only through
``sys._current_frames`` and trace functions set for all threads, which the audit hook refuses
to candidate code (``audit.py``); in the loop's thread it refuses every frame to code with a
candidate's frame under it (a finaliser or gc callback the harness's own work set off).

Results come back as ``(True, value)`` or ``(False, (type name, text))``: plain tuples and exact
strings, described in this thread, so that the loop's thread runs none of an exception's code
(its ``__str__``, a metaclass's ``__name__``). Jobs are numbered: a result put on the queue by
the candidate's code (it can find the queues under its frames) before its job ended comes back
as ``(None, ...)``, which the worker reports as tampering: the job's number is not the one sent,
or the thread is still running (not back in its loop's wait) once its result is in.
"""
from __future__ import annotations

import _queue
import functools
import gc
import itertools
import sys
import threading
import time

from .errors import chain_text


def describe(e: BaseException) -> tuple[str, str]:
    """An exception's class name and text (its chain, the last 4000 characters), as exact
    strings: whatever its methods do happens here."""
    try:
        cls = type(e)
        name = f"{type.__dict__['__qualname__'].__get__(cls)}"
        text = chain_text(e)[-4000:]
        return str.__str__(name), str.__str__(text) if isinstance(text, str) else "?"
    except BaseException:  # noqa: BLE001 - an exception whose text raises
        return "Exception", "(its text could not be read)"


def _job(todo, done) -> None:
    n, fn, args = todo.get()
    try:
        done.put((n, True, fn(*args)))
    except BaseException as e:  # noqa: BLE001 - SystemExit from candidate code is a result too
        done.put((n, False, describe(e)))


def serve(todo, done, job=_job) -> None:
    """The candidate's thread: run jobs until the process ends (the loop's thread ends it)."""
    while True:
        job(todo, done)   # a frame per job: nothing of one job is left for the next


IDLE_WAIT_S = 0.05   # how long the candidate's thread may take to reach its next wait


def _waiting(watch) -> bool:
    """Whether the candidate's thread is in this module's job loop and nothing else: its top
    frame a ``_job`` called by ``serve``, called by ``Jobs.serve`` (a loop the candidate's code
    started itself, ``_job`` called from its own frames, has other frames under it). ``watch``:
    the thread and what this reads, bound before any candidate code ran (``Jobs``)."""
    ident, codes, frames = watch[:3]
    collecting, gc_off, gc_on = watch[6:9]
    # no collection here: a callback of the candidate's that a collection ran in this thread
    # would be raised from this frame, the one frame of this thread that takes frames
    on = collecting()
    gc_off()
    try:
        f = frames().get(ident)
        for code in codes:
            if f is None or f.f_code is not code:
                return False
            f = f.f_back
        return True
    finally:
        if on:
            gc_on()


def _submit(todo, done, count, watch, fn, *args):
    n = next(count)
    todo.put((n, fn, args))
    m, ok, value = done.get()
    if m != n:   # put there by the candidate's code, which found the queue under its frames
        return None, ("ResultOutOfOrder", f"a result for job {m} came for job {n}: the "
                      "candidate's thread returned a result the job did not")
    # The job's result is put just before its thread waits for the next job; still busy once
    # it is back, the thread sent a result before its work was done (the queue found under its
    # frames, and the job's own result taken off by another of its threads).
    waiting, clock, pause = watch[3:6]
    until = clock() + IDLE_WAIT_S
    while not waiting(watch):
        if clock() > until:
            return None, ("ResultBeforeItsEnd", "the candidate's thread went on running after "
                          "its result came back: a result the job did not return")
        pause(0)
    return ok, value


def _inline(fn, *args):
    try:
        return True, fn(*args)
    except BaseException as e:  # noqa: BLE001
        return False, describe(e)


class Jobs:
    """Work for the candidate's thread. ``submit(fn, *args)`` runs ``fn(*args)`` there and
    returns ``(ok, value)`` (``ok`` None: the result was not the job's); it is a
    ``functools.partial`` over the two queues and the jobs' count, bound here, so a
    method or function rebound later changes nothing the loop calls. ``native_id``: the
    candidate thread's id for the OS (its CPUs are set with the loop's)."""

    def __init__(self):
        self._todo, self._done = _queue.SimpleQueue(), _queue.SimpleQueue()
        watch = (threading.get_ident(), (_job.__code__, serve.__code__, Jobs.serve.__code__),
                 sys._current_frames, _waiting, time.perf_counter, time.sleep,
                 gc.isenabled, gc.disable, gc.enable)
        self.submit = functools.partial(_submit, self._todo, self._done, itertools.count(), watch)
        self.native_id = threading.get_native_id()   # made by the thread that will serve it

    def serve(self) -> None:
        serve(self._todo, self._done)


class Inline:
    """The same interface with no second thread (the judge's own runner of the reference)."""
    submit = staticmethod(_inline)
    native_id = None
