"""The worker's audit hook judges a ctypes call by the C function it lands on, however the
function pointer was made (a symbol looked up through another library's handle, a CFUNCTYPE of a
plain integer address): ``audit._symbol_at`` names it. Functions glibc picks per CPU (memcpy and
other IFUNCs) land on an implementation no symbol names: those are judged by name at lookup."""
import ctypes

from torch_cudal1.harness import audit


def test_a_function_pointer_is_named_by_the_symbol_it_lands_on():
    audit._bind_dladdr()
    libc = ctypes.CDLL(None)
    for name in ("system", "mallopt", "getpid"):
        addr = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
        # a CFUNCTYPE made from the bare integer lands on the same symbol
        ptr = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
        assert audit._bare(audit._symbol_at(ctypes.cast(ptr, ctypes.c_void_p).value)) == name
    assert "system" in audit._LIBC_DANGER and "mallopt" in audit._LIBC_DANGER
    assert "getpid" not in audit._LIBC_DANGER


def test_an_address_inside_a_function_or_nowhere_names_nothing():
    audit._bind_dladdr()
    addr = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p).value
    assert audit._symbol_at(addr + 1) == ""
    assert audit._symbol_at(16) == ""
    assert audit._symbol_at(None) == ""
