"""What the cache keeps of a winner's build is what the verified process ran.

A candidate may write its build folder (it compiles there), so it could load one library, then
leave another in its place and have that one cached and served. The judge keeps only the
libraries it saw the worker map (``/proc/<pid>/maps``) and that stayed the same file with the same
content; the runner checks their hashes once more when it copies them; a serving process loads
exactly the file torch imported for each ``load_inline``/``load`` call.

The extensions here are plain CPython modules (no torch headers), so each builds in about a
second through torch's own ``cpp_extension.load`` (ninja and the host compiler).
"""
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from helpers import run_python
from torch_cudal1.cache.key import cache_key
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.contracts import Attempt, Candidate
from torch_cudal1.search import SearchResult
from torch_cudal1.search.store import store_search_result
from torch_cudal1.task import Task
from torch_cudal1.verify import evaluate, loaded_builds
from torch_cudal1.verify.runner import _collect_build

# ``affine(x) = x * FACTOR + 1`` through Python's number protocol, so it works on tensors.
MODULE_C = r"""
#include <Python.h>
static PyObject* affine(PyObject* self, PyObject* x) {
    PyObject* k = PyLong_FromLong(FACTOR);
    PyObject* one = PyLong_FromLong(1);
    PyObject* t = PyNumber_Multiply(x, k);
    PyObject* r = t ? PyNumber_Add(t, one) : NULL;
    Py_XDECREF(t); Py_DECREF(k); Py_DECREF(one);
    return r;
}
static PyMethodDef methods[] = {{"affine", affine, METH_O, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "MODNAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_MODNAME(void) { return PyModule_Create(&def); }
"""

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2 + 1

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return []
'''

CANDIDATE = '''
import os

import torch.nn as nn
from torch.utils import cpp_extension

_SRC = {src!r}.replace("MODNAME", "{name}")

with open("ext.cpp", "w") as f:   # in its work folder (the serving process's own folder)
    f.write(_SRC.replace("FACTOR", "2"))
_ext = cpp_extension.load(name="{name}", sources=[os.path.abspath("ext.cpp")], verbose=False)
{swap}

class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.affine(x)


def get_init_inputs():
    return []
'''

# After loading its honest build, put a library computing x * 3 + 1 at that build's path (the
# rename spelled so that no static check sees it: the judge's look at the process is what counts).
SWAP = '''
with open("other.cpp", "w") as f:
    f.write(_SRC.replace("FACTOR", "3"))
_other = cpp_extension.load(name="{name}_other", sources=[os.path.abspath("other.cpp")],
                            is_python_module=False, verbose=False)
vars(os)["re" + "place"](_other, os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "{name}",
                                              "{name}.so"))
'''

HIT = """
import json, os, torch, torch.utils.cpp_extension as ce
os.chdir({cwd!r})
def _forbidden(*a, **k):
    raise AssertionError("a cache hit must not build")
ce._jit_compile = _forbidden
from torch_cudal1.cache.store import CacheStore
from torch_cudal1.cache.winner import load_winner
from torch_cudal1.counters import STATS
forward = load_winner(CacheStore({root!r}).load({key!r}), "cpu")
x = torch.randn(8, 32)
err = (forward(x) - (x * 2 + 1)).abs().max().item()
print(json.dumps({{"err": err, "prebuilt": STATS["prebuilt_loaded"]}}))
"""


def _candidate(name: str, swap: bool) -> Candidate:
    src = CANDIDATE.format(src=MODULE_C, name=name, swap=SWAP.format(name=name) if swap else "")
    return Candidate(src, origin="test:loaded_builds", round=1)


def _verify(tmp_path, cand):
    wd = tmp_path / "work"
    verdict, timing = evaluate(Task(TASK, name="affine"), cand, device="cpu", trials=1,
                               timeout_s=600, workdir=str(wd),
                               build_cache_dir=str(tmp_path / "builds"))
    return verdict, timing, wd


@pytest.mark.slow
def test_a_library_replaced_after_it_was_loaded_is_rejected_and_nothing_is_kept(tmp_path):
    verdict, _, wd = _verify(tmp_path, _candidate("cudal1_swapped_ext", swap=True))
    assert not verdict.accepted
    assert verdict.reason == "artifact_changed", (verdict.reason, verdict.detail)
    assert "cudal1_swapped_ext.so" in verdict.detail
    assert not (wd / "build").exists()


@pytest.mark.slow
def test_the_library_the_verified_process_loaded_is_kept_and_served_without_a_compiler(tmp_path):
    name = "cudal1_kept_ext"
    cand = _candidate(name, swap=False)
    verdict, timing, wd = _verify(tmp_path, cand)
    assert verdict.accepted, (verdict.reason, verdict.detail)
    kept = sorted(p.relative_to(wd / "build").as_posix() for p in (wd / "build").rglob("*")
                  if p.is_file())
    assert kept == [f"{name}/{name}.so"]   # the library alone: no sources, objects or ninja files
    result = SearchResult(key="k", winner=Attempt(cand, verdict, timing), attempts=[],
                          eager_ms=None, inductor_ms=None, rounds_run=1, seconds=0.0,
                          winner_dir=wd)
    store = CacheStore(tmp_path / "cache")
    fields = {"graph": "test-loaded-builds"}
    key = cache_key(fields)
    store_search_result(store, key, fields, Task(TASK, name="affine"), result, "cpu")
    r = run_python(HIT.format(root=str(tmp_path / "cache"), key=key, cwd=str(tmp_path)))
    assert r["err"] < 1e-6 and r["prebuilt"] == 1


# -- the parts on their own --------------------------------------------------------------------
def _compile(tmp_path: Path, module: str, factor: int, out: Path) -> Path:
    src = tmp_path / f"{module}_{factor}.c"
    src.write_text(MODULE_C.replace("FACTOR", str(factor)).replace("MODNAME", module))
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-I", sysconfig.get_paths()["include"],
                    str(src), "-o", str(out)], check=True)
    return out


LOADER = """
import ctypes, sys
libs = [ctypes.CDLL(p) for p in sys.argv[1:]]
print("loaded", flush=True)
sys.stdin.read()
"""


def _loading_process(paths):
    proc = subprocess.Popen([sys.executable, "-c", LOADER, *map(str, paths)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"loaded"
    return proc


def _watch(build: Path, proc) -> loaded_builds.LoadedBuilds:
    return loaded_builds.LoadedBuilds(str(build), proc.pid)   # this process is the worker


@pytest.mark.parametrize("change", ["renamed_over", "rewritten_in_place", "deleted"])
def test_a_loaded_library_changed_on_disk_is_seen_from_outside_the_process(tmp_path, change):
    build = tmp_path / "build"
    lib = _compile(tmp_path, "m", 2, build / "m" / "m.so")
    other = _compile(tmp_path, "m", 3, tmp_path / "other" / "m.so")
    proc = _loading_process([lib])
    try:
        w = _watch(build, proc)
        w.look("after import")
        assert list(w.files()) == ["m/m.so"]
        if change == "renamed_over":
            os.replace(other, lib)
        elif change == "rewritten_in_place":
            # same inode, other bytes (the process's own mapping is not touched again here)
            data = bytearray(lib.read_bytes())
            data[-1] ^= 0xFF
            with open(lib, "r+b") as f:
                f.write(bytes(data))
        else:
            lib.unlink()
        with pytest.raises(loaded_builds.Changed, match="m/m.so"):
            w.look("after timing")
    finally:
        proc.kill()
        proc.wait()


def test_libraries_never_loaded_are_not_kept(tmp_path):
    build = tmp_path / "build"
    lib = _compile(tmp_path, "m", 2, build / "m" / "m.so")
    _compile(tmp_path, "m", 3, build / "m" / "m.a.so")   # written beside it, never loaded
    proc = _loading_process([lib])
    try:
        w = _watch(build, proc)
        w.look("after import")
        w.look("after timing")
        assert w.files() == {"m/m.so": loaded_builds.sha256(str(lib))}
    finally:
        proc.kill()
        proc.wait()


def test_the_worker_is_found_under_its_sandbox_by_its_command_line(tmp_path):
    from torch_cudal1.verify.judge import WORKER_ARGS
    # like bwrap: its own command line names the worker's after its options; the worker reads
    # its program from a pipe (``python -``)
    sandbox = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys
        subprocess.run([sys.executable, "-"], input=b"import time; time.sleep(30)")
        """), sys.executable, *WORKER_ARGS])
    pid = None
    try:
        for _ in range(100):
            pid = loaded_builds.worker_pid(sandbox.pid, WORKER_ARGS)
            if pid:
                break
            time.sleep(0.05)
        assert pid and pid != sandbox.pid
        assert open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1:2] == [b"-"]
        assert loaded_builds.worker_pid(sandbox.pid, ("-m", "another_module")) is None
    finally:
        if pid:
            os.kill(pid, 9)
        sandbox.kill()
        sandbox.wait()


def test_a_kept_file_changed_after_the_judge_looked_keeps_nothing(tmp_path):
    build = tmp_path / "build"
    lib = _compile(tmp_path, "m", 2, build / "m" / "m.so")
    kept = {"m/m.so": loaded_builds.sha256(str(lib))}
    wd = tmp_path / "wd"
    wd.mkdir()
    assert _collect_build(str(build), wd, kept) is None
    assert (wd / "build" / "m" / "m.so").read_bytes() == lib.read_bytes()
    wd2 = tmp_path / "wd2"
    wd2.mkdir()
    _compile(tmp_path, "m", 3, lib)   # changed after the judge's last look
    assert "m/m.so" in _collect_build(str(build), wd2, kept)
    assert not (wd2 / "build").exists()
    assert _collect_build(str(build), wd2, None) is None and not (wd2 / "build").exists()


SERVED = """
import json, sys, torch
import torch.utils.cpp_extension as ce
from pathlib import Path
from torch_cudal1.cache.winner import prebuilt_extensions
with prebuilt_extensions(Path(sys.argv[1])):
    a = ce.load_inline("m", cpp_sources="// first")
    b = ce.load_inline("m", cpp_sources="// other sources: torch named this build m_v1")
x = torch.ones(3)
print(json.dumps({"a": a.affine(x).tolist(), "b": b.affine(x).tolist()}))
"""


def test_a_served_winner_loads_exactly_the_file_torch_imported_for_each_call(tmp_path):
    art = tmp_path / "artifacts"
    _compile(tmp_path, "m", 2, art / "m" / "m.so")
    _compile(tmp_path, "m_v1", 5, art / "m" / "m_v1.so")
    _compile(tmp_path, "m", 3, art / "m" / "m.a.so")   # sorts first; never what torch imported
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-c", SERVED, str(art)], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got == {"a": [3.0, 3.0, 3.0], "b": [6.0, 6.0, 6.0]}
