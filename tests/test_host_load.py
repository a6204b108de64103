"""The judge's count of CPU time other processes used while it timed a batch."""
import os
import subprocess
import sys
import time

import pytest

from torch_cudal1.verify.host_load import OthersClock

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
    assert others is not None and others > 0.3, others
    assert own is not None and own < 0.3, own
