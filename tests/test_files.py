"""simsched.files: atomic outputs that respect devices, symlinks, umask and the user's path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from simsched.errors import ConfigError, OutputError
from simsched.files import (
    atomic_output,
    cache_dir,
    read_user_text,
    write_json_atomic,
    write_text_atomic,
)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_new_file_gets_the_umask_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
        os.umask(0o002)
        write_text_atomic(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o664


def test_replacing_keeps_the_mode_of_the_existing_file(tmp_path):
    p = tmp_path / "r.json"
    p.write_text("old")
    p.chmod(0o640)
    write_json_atomic(p, {"a": 1})
    assert p.read_text() == '{\n "a": 1\n}\n'
    assert stat.S_IMODE(p.stat().st_mode) == 0o640


def test_symlink_is_written_through(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_device_is_written_into_not_replaced(tmp_path):
    write_text_atomic("/dev/null", "nothing")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_full_device_is_one_error_naming_it():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(OutputError, match=r"^/dev/full: cannot write \(no space left"):
        write_text_atomic("/dev/full", "x" * 10)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_fifo_receives_the_content(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the reader
        try:
            with open(fifo, "rb") as f:
                data = f.read()
            os._exit(0 if data == b"hello" else 1)
        except BaseException:
            os._exit(2)
    write_text_atomic(fifo, "hello")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_failed_writer_leaves_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(p) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert p.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_interrupted_writer_leaves_no_temporary(tmp_path):
    with pytest.raises(KeyboardInterrupt), atomic_output(tmp_path / "x.bin") as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_the_temporary_is_made_leaves_none(tmp_path, monkeypatch):
    """A Ctrl-C that arrives while the temporary file is being created (it left
    ``.result.json.*.tmp.json`` files) is held back until the block that removes it."""
    import signal
    import tempfile

    real = tempfile.mkstemp

    def mkstemp_then_ctrl_c(*args, **kw):
        made = real(*args, **kw)
        os.kill(os.getpid(), signal.SIGINT)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(tmp_path / "result.json", "{}")
    assert list(tmp_path.iterdir()) == []
    # Ctrl-C is delivered again afterwards, not left blocked
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_temporary_keeps_the_suffix_for_format_sniffing_writers(tmp_path):
    with atomic_output(tmp_path / "fig.svg") as tmp:
        assert tmp.suffix == ".svg" and tmp.parent == tmp_path
        tmp.write_text("<svg/>")


def test_refuse_existing_when_asked(tmp_path):
    p = tmp_path / "keep.sst"
    p.write_text("mine")
    with pytest.raises(OutputError, match="keep.sst: exists"):
        write_text_atomic(p, "other", overwrite=False)
    assert p.read_text() == "mine"


def test_folder_target_is_an_error_naming_it(tmp_path):
    with pytest.raises(OutputError, match=f"^{tmp_path}: is a folder"):
        write_text_atomic(tmp_path, "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_names_the_users_path(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputError) as info:
            write_text_atomic(ro / "out.json", "x")
        assert str(info.value).startswith(f"{ro / 'out.json'}: cannot write")
        assert ".tmp" not in str(info.value)
    finally:
        ro.chmod(0o700)


def test_cache_dir_lookup(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir("baselines") == tmp_path / "c" / "baselines"
    monkeypatch.delenv("SIMSCHED_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "simsched"


def test_read_user_text_rejects_binary_in_one_line(tmp_path):
    p = tmp_path / "pic.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(ConfigError, match=r"pic.png: not a YAML file \(byte 0 is not UTF-8"):
        read_user_text(p, "YAML")
    with pytest.raises(ConfigError, match="no such file"):
        read_user_text(tmp_path / "none.yaml")


def test_full_disk_during_the_write_names_the_users_path(tmp_path):
    import errno

    target = tmp_path / "big.parquet"
    with pytest.raises(OutputError) as info, atomic_output(target) as tmp:
        tmp.write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    assert str(info.value) == f"{target}: cannot write (no space left on the device)"
    assert list(tmp_path.iterdir()) == []


def test_read_only_file_system_is_one_error(tmp_path, monkeypatch):
    import errno
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / ".x.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(OutputError, match=r"out.csv: cannot write \(read-only file system\)$"):
        write_text_atomic(tmp_path / "out.csv", "a,b\n")
