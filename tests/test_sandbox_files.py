"""Files a sandboxed child could write, read by the host: never through a link, never a device
or a pipe, never without bound; a log read through the host's own descriptor."""
import os

import pytest

from torch_cudal1.verify.sandbox_files import read_regular, tail


def test_a_regular_file_is_read(tmp_path):
    p = tmp_path / "result.json"
    p.write_bytes(b'{"ok": 1}')
    assert read_regular(p) == b'{"ok": 1}'


def test_a_link_a_device_a_pipe_and_a_large_file_are_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("HOST-SECRET")
    link = tmp_path / "link"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    dev = tmp_path / "zero"
    dev.symlink_to("/dev/zero")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    for path in (link, fifo, dev, "/dev/zero"):
        with pytest.raises(OSError):
            read_regular(path)
    with pytest.raises(OSError):
        read_regular(big, limit=1024)


def test_the_tail_comes_from_the_descriptor_not_the_name(tmp_path):
    log = tmp_path / "worker.log"
    fd = os.open(log, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"first line\n" + b"y" * 100 + b"\nlast words\n")
        log.unlink()
        log.symlink_to("/dev/zero")
        assert tail(fd, 11) == "last words"
        assert tail(None) == ""
    finally:
        os.close(fd)
