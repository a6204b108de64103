"""How a verifier process is started: the files of its work dir, and the limits it runs under.

Shared by the parent that starts the judge (``runner``), the template that forks it
(``forkserver``) and the judge itself (``judge``), which reads and writes those files.
"""
from __future__ import annotations

import fcntl
import os
import signal
import termios

CANDIDATE_FILE = "candidate.py"
REQUEST_FILE = "request.json"
RESULT_FILE = "result.json"
REAL_INPUTS_FILE = "real_inputs.safetensors"


def _parent_death_signal():
    """prctl(PR_SET_PDEATHSIG, SIGKILL), resolved here in the parent: the child (in its own
    process group, so that a timeout kills its whole group) must still die with the process that
    started it, or a killed search would leave candidates running on the device."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return lambda: prctl(1, signal.SIGKILL, 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return lambda: None


_SET_PDEATHSIG = _parent_death_signal()


def own_group() -> None:
    """In a child before it runs anything: its own process group (``killpg`` on its pid ends
    it and what it started), in its parent's session, and no controlling terminal.

    Not a session of its own: where the kernel groups scheduling by session (autogroup, on by
    default on most distributions), a new session is a group that shares the CPUs with every
    other session's as one. Its torch threads then wait at every parallel op's barrier for a
    thread the scheduler gave to another session's busy process: on 2 cores beside one busy
    process of the caller's session, a 12-block conv net timed 553 ms in the verifier and 42 ms
    in the caller (``benchmarks/foreign_load.py``). A verifier's timings would say more about the
    host than the code, and a background search worker would slow the user's own model as much.
    Letting go of the terminal keeps what a new session gave: nothing it starts can read or write
    the user's terminal."""
    os.setpgid(0, 0)
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return                      # no controlling terminal
    try:
        fcntl.ioctl(fd, termios.TIOCNOTTY)   # not a session leader: only this process lets go
    except OSError:
        pass
    finally:
        os.close(fd)


def has_terminal() -> bool:
    """Whether this process has a controlling terminal."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
        return True
    except OSError:
        return False


def child_limits(memory_limit_mb: float | None):
    """The ``preexec_fn`` of a verifier process: its own process group (``own_group``: a timeout
    kills the whole group), death with its parent, and on CPU an address-space limit
    (``memory_limit_mb``)."""
    def apply() -> None:
        own_group()
        _SET_PDEATHSIG()
        if memory_limit_mb:
            import resource
            lim = int(memory_limit_mb * 2**20)
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            if hard != resource.RLIM_INFINITY:
                lim = min(lim, hard)
            resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
    return apply


__all__ = ["CANDIDATE_FILE", "REAL_INPUTS_FILE", "REQUEST_FILE", "RESULT_FILE", "child_limits",
           "has_terminal", "own_group"]
