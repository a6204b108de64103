"""The audit hook tells a library's code from the candidate's by the file name its code object
carries. Code made from text (``compile``) or bytes (``marshal``, a ``.pyc``) can carry any name,
so with the candidate's code on the stack such code may carry a library's, the standard
library's or the harness's file name only where it was made from that very file. The verdicts
of whole candidates are in ``tests/adversarial/`` (``code_from_marshal.py`` and its kin, honest
``honest_imports_in_call.py``); these check the rule's pieces in this process."""
import importlib.util
import marshal
import sys
import types
from pathlib import Path

import torch

from torch_cudal1.harness import audit

TORCH_INIT = torch.__file__


def _importer_frame(bytecode_path):
    """What the import system's ``_compile_bytecode`` frame shows the rule."""
    code = types.SimpleNamespace(co_filename="<frozen importlib._bootstrap_external>",
                                 co_name="_compile_bytecode")
    return types.SimpleNamespace(f_code=code, f_locals={"bytecode_path": bytecode_path})


def _cached_bytecode(module) -> Path:
    path = Path(importlib.util.cache_from_source(module.__file__))
    assert path.is_file(), path
    return path


def test_a_name_nested_at_any_depth_is_found():
    named = compile("x = 1", TORCH_INIT, "exec")
    deep = named
    for _ in range(200):
        deep = (deep,)
    assert audit._named_outside(deep) == TORCH_INIT
    assert audit._named_outside({"k": [frozenset({named})]}) == TORCH_INIT
    assert audit._named_outside(compile("x = 1", "/work/candidate.py", "exec")) is None
    assert audit._named_outside((1, "a", b"b")) is None


def test_bytecode_of_a_library_file_loads_under_its_name():
    import torch.utils.show_pickle as mod
    pyc = _cached_bytecode(mod)
    data = pyc.read_bytes()[16:]
    assert audit._code_named_elsewhere("marshal.loads", (data,), _importer_frame(str(pyc))) == ""


def test_bytes_under_a_library_name_from_anywhere_else_are_refused():
    import torch.utils.show_pickle as mod
    forged = marshal.dumps(compile("x = 1", TORCH_INIT, "exec"))
    # from a .pyc of the candidate's, a library's .pyc that holds other bytes, or no file at all
    for frame in (_importer_frame("/tmp/work/renamed.pyc"),
                  _importer_frame(str(_cached_bytecode(mod))), None):
        why = audit._code_named_elsewhere("marshal.loads", (forged,), frame)
        assert why.startswith("marshal.loads: code under the file name") and TORCH_INIT in why
    # the candidate's own names pass
    own = marshal.dumps(compile("x = 1", "/tmp/work/candidate.py", "exec"))
    assert audit._code_named_elsewhere("marshal.loads", (own,), None) == ""


def test_text_compiled_under_a_library_name_must_be_that_file():
    source = Path(TORCH_INIT).read_bytes()
    assert audit._code_named_elsewhere("compile", (source, TORCH_INIT), None) == ""
    # other text, from no frame or from code that is not a library's (this test's)
    for frame in (None, sys._getframe()):
        why = audit._code_named_elsewhere("compile", (b"x = 1", TORCH_INIT), frame)
        assert why.startswith("compile: code under the file name")
    # the standard library's frozen modules and a name under a library's folder count as theirs
    assert audit._code_named_elsewhere("compile", (b"x = 1", "<frozen importlib._bootstrap>"),
                                       None)
    # text under the candidate's own names, or none
    assert audit._code_named_elsewhere("compile", (b"x = 1", "<string>"), None) == ""
    assert audit._code_named_elsewhere("compile", (b"x = 1", "/tmp/work/candidate.py"), None) == ""


def test_code_from_a_file_object_is_refused():
    assert audit._code_named_elsewhere("marshal.load", (), None).startswith("marshal.load:")
