"""How a verifier process is started: the files of its work dir, and the limits it runs under.

Shared by the parent that starts the judge (``runner``), the template that forks it
(``forkserver``) and the judge itself (``judge``), which reads and writes those files.
"""
from __future__ import annotations

import os
import signal

CANDIDATE_FILE = "candidate.py"
REQUEST_FILE = "request.json"
RESULT_FILE = "result.json"
REAL_INPUTS_FILE = "real_inputs.safetensors"


def _parent_death_signal():
    """prctl(PR_SET_PDEATHSIG, SIGKILL), resolved here in the parent: the child (in its own
    session, so that a timeout kills its whole group) must still die with the process that
    started it, or a killed search would leave candidates running on the device."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return lambda: prctl(1, signal.SIGKILL, 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return lambda: None


_SET_PDEATHSIG = _parent_death_signal()


def child_limits(memory_limit_mb: float | None):
    """The ``preexec_fn`` of a verifier process: its own session (a timeout kills its whole
    group), death with its parent, and on CPU an address-space limit (``memory_limit_mb``)."""
    def apply() -> None:
        os.setsid()
        _SET_PDEATHSIG()
        if memory_limit_mb:
            import resource
            lim = int(memory_limit_mb * 2**20)
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            if hard != resource.RLIM_INFINITY:
                lim = min(lim, hard)
            resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
    return apply


__all__ = ["CANDIDATE_FILE", "REAL_INPUTS_FILE", "REQUEST_FILE", "RESULT_FILE", "child_limits"]
