"""The judge's count of CPU time other processes used while it timed a batch."""
import os
import shutil
import subprocess
import sys
import time
import types

import pytest

from torch_cudal1.verify.host_load import OthersClock, compiler_running
from torch_cudal1.verify.judge import Worker

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs /proc")
SPIN = "import time\nt = time.time() + {s}\nwhile time.time() < t: pass\n"


def test_a_busy_stranger_counts_and_a_busy_member_of_the_tree_does_not(tmp_path):
    spin = tmp_path / "spin.py"
    spin.write_text(SPIN.format(s=1.0))
    # the tree: a process whose child spins (the sandbox's work is the candidate's own)
    tree = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                             f"subprocess.run([sys.executable, {str(spin)!r}])"])
    try:
        clock = OthersClock(tree.pid)
        time.sleep(0.15)   # its child started
        clock.start()
        time.sleep(0.6)
        own = clock.others_s()
    finally:
        tree.wait()
    stranger = subprocess.Popen([sys.executable, str(spin)])   # outside the measured tree
    idle = subprocess.Popen(["sleep", "2"])
    try:
        clock = OthersClock(idle.pid)
        time.sleep(0.15)
        clock.start()
        time.sleep(0.6)
        others = clock.others_s()
    finally:
        stranger.wait()
        idle.kill()
        idle.wait()
    # measured against each other: on a shared host both also hold whatever else ran meanwhile
    assert others is not None and own is not None, (others, own)
    assert others - own > 0.3, (others, own)


def _tree_with(tmp_path, exe_name: str, seconds: float) -> subprocess.Popen:
    """A process whose child is ``sleep`` run under the name ``exe_name`` (a compiler's, or not)."""
    link = tmp_path / exe_name
    link.symlink_to(shutil.which("sleep"))
    return subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                             f"subprocess.run([{str(link)!r}, {str(seconds)!r}])"])


def test_a_compiler_in_the_candidates_tree_is_seen_and_a_plain_child_is_not(tmp_path):
    building = _tree_with(tmp_path, "ninja", 3)
    other = _tree_with(tmp_path, "worker", 3)
    try:
        time.sleep(0.5)
        assert compiler_running(building.pid)
        assert not compiler_running(other.pid)
    finally:
        for p in (building, other):
            p.kill()
            p.wait()


def test_a_first_call_past_its_allowance_waits_while_building_and_no_longer(tmp_path):
    """The judge's wait for an answer: past ``timeout_s`` only while a compiler runs in the
    worker's tree, and never past the verification's limit."""
    r, w = os.pipe()
    try:
        for name, expect_wait in (("nvcc", True), ("spin", False)):
            tree = _tree_with(tmp_path, name, 2.5)
            fake = types.SimpleNamespace(rep=r, proc=tree)
            try:
                time.sleep(0.3)
                t0 = time.monotonic()
                left = Worker._wait_building(fake, 0.5, time.monotonic() + 30)
                waited = time.monotonic() - t0
            finally:
                tree.kill()
                tree.wait()
            if expect_wait:   # the build ran ~2.2 s more: it waited for it, then gave up
                assert left == 0.0 and 1.5 < waited < 6, waited
            else:
                assert left == 0.0 and waited < 1.5, waited
        tree = _tree_with(tmp_path, "ptxas", 10)
        try:
            time.sleep(0.3)
            t0 = time.monotonic()
            Worker._wait_building(types.SimpleNamespace(rep=r, proc=tree), 0.2, time.monotonic() + 1.5)
            assert time.monotonic() - t0 < 3.5   # the limit, not the build, ends the wait
        finally:
            tree.kill()
            tree.wait()
        os.write(w, b"x")                          # an answer ends the wait at once
        tree = _tree_with(tmp_path, "ninja", 5)
        try:
            assert Worker._wait_building(types.SimpleNamespace(rep=r, proc=tree), 5, 60) > 0
        finally:
            tree.kill()
            tree.wait()
    finally:
        os.close(r)
        os.close(w)
