"""simsched.files: atomic outputs that respect devices, symlinks, umask and the user's path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from simsched.errors import ConfigError, OutputError, float_out_of_range
from simsched.files import (
    atomic_output,
    cache_dir,
    cache_output,
    check_not_input,
    describe_os_error,
    make_output_dir,
    parse_json,
    parse_yaml,
    read_user_text,
    read_yaml,
    remove_orphan_temporaries,
    same_file,
    write_json_atomic,
    write_text_atomic,
)
from tests.blocking import raised_within


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


def test_failed_writer_leaves_no_folder_made_for_it(tmp_path):
    """`trace gen` of an unknown generator into new/x.sst left an empty new/."""
    with pytest.raises(RuntimeError), atomic_output(tmp_path / "a" / "b" / "t.csv"):
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
    # a folder something else was put in meanwhile stays, and so do its parents
    with pytest.raises(RuntimeError), atomic_output(tmp_path / "a" / "b" / "t.csv"):
        (tmp_path / "a" / "other").write_text("keep")
        raise RuntimeError("writer failed")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["other"]
    with atomic_output(tmp_path / "c" / "t.csv") as tmp:
        tmp.write_text("done")
    assert (tmp_path / "c" / "t.csv").read_text() == "done"
    # a make that fails part-way (a name too long) leaves none of the folders it made
    with pytest.raises(OutputError), atomic_output(tmp_path / "n" / "m" / ("L" * 300) / "t"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "c"]


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


@pytest.mark.parametrize("kind", ["device", "named pipe", "socket", "link to a device"])
def test_read_user_text_refuses_what_is_not_a_regular_file(tmp_path, kind):
    """/dev/zero was read until memory ran out, and a named pipe blocked the command for
    ever (``machine show``, ``sweep status``).  /dev/null stands for the devices here: it
    read as an empty file."""
    import socket

    path = tmp_path / "m.yaml"
    if kind == "device":
        path = Path("/dev/null")
    elif kind == "named pipe":
        os.mkfifo(path)  # opening it for reading waits for a writer
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:
        path.symlink_to("/dev/null")
    out = raised_within(lambda: read_yaml(path), "read_user_text")
    says = {"named pipe": "a named pipe", "socket": "a socket"}.get(kind, "a device")
    assert [type(e) for e in out] == [ConfigError]
    assert str(out[0]) == f"{path}: is {says}, expected a YAML file"


def test_read_user_text_names_an_empty_path():
    """Path("") is the current folder: the error said ".: is a folder"."""
    with pytest.raises(ConfigError) as info:
        read_yaml("")
    assert str(info.value) == "an empty path, expected a YAML file"
    with pytest.raises(ConfigError, match=r"^\.: is a folder, expected a YAML file$"):
        read_yaml(".")


def test_a_cache_folder_that_cannot_be_made_names_the_variable(monkeypatch, tmp_path):
    """With SIMSCHED_CACHE_DIR a file, the errors named a path the user never typed
    ("existing.txt/traces: cannot create the folder...") and not the setting behind it."""
    import errno

    existing = tmp_path / "existing.txt"
    existing.write_text("x")
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(existing))
    note = f"; the path comes from SIMSCHED_CACHE_DIR={existing}"
    with pytest.raises(OutputError) as info:
        make_output_dir(cache_dir("traces"))
    assert str(info.value) == (
        f"{existing / 'traces'}: cannot create the folder: {existing} is a file, not a folder{note}"
    )
    with pytest.raises(OutputError) as info:  # the cached facts and baselines
        write_json_atomic(cache_dir("cab", "f.json"), {})
    assert str(info.value) == (
        f"{existing / 'cab' / 'f.json'}: cannot write (a parent is not a folder{note})"
    )
    # what a module's own mkdir raises, as the command line reports it (the kernels)
    exc = NotADirectoryError(errno.ENOTDIR, "Not a directory", str(cache_dir("kernels")))
    assert describe_os_error(exc) == f"a parent is not a folder{note}"
    elsewhere = NotADirectoryError(errno.ENOTDIR, "Not a directory", str(tmp_path / "k"))
    assert describe_os_error(elsewhere) == "a parent is not a folder"
    monkeypatch.delenv("SIMSCHED_CACHE_DIR")
    assert describe_os_error(exc) == "a parent is not a folder"


def test_a_users_path_under_a_sound_cache_folder_is_not_blamed_on_it(monkeypatch, tmp_path):
    """With SIMSCHED_CACHE_DIR a folder that works, a path the user typed under it (or any
    relative one, with the variable '.') was said to come from the variable."""
    import errno

    (tmp_path / "afile").write_text("x")
    monkeypatch.chdir(tmp_path)
    for env in (str(tmp_path), "."):
        monkeypatch.setenv("SIMSCHED_CACHE_DIR", env)
        with pytest.raises(OutputError) as info:
            make_output_dir(tmp_path / "afile" / "sub")
        assert "SIMSCHED_CACHE_DIR" not in str(info.value)
        exc = FileNotFoundError(errno.ENOENT, "No such file", "missing.sst")
        assert describe_os_error(exc) == "no such file or folder"
    # a relative setting that is a file still names itself for an absolute path in it
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", "afile")
    exc = NotADirectoryError(errno.ENOTDIR, "Not a directory", str(tmp_path / "afile" / "k"))
    assert describe_os_error(exc).endswith("; the path comes from SIMSCHED_CACHE_DIR=afile")


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


def test_yaml_refuses_duplicate_keys_at_any_depth():
    assert parse_yaml("a: 1\nb: {c: 2}\n", "x.yaml") == {"a": 1, "b": {"c": 2}}
    with pytest.raises(
        ConfigError, match=r"^x.yaml: invalid YAML at line 2, column 1: duplicate key 'a'$"
    ):
        parse_yaml("a: 1\na: 2\n", "x.yaml")
    with pytest.raises(ConfigError, match="line 1, column 11: duplicate key 'c'"):
        parse_yaml("b: {c: 2, c: 3}\n", "x.yaml")
    with pytest.raises(ConfigError, match="duplicate key 1"):
        parse_yaml("- {1: a, 1: b}\n", "x.yaml")
    # a merge key may be overridden, as YAML intends; object tags stay refused
    assert parse_yaml("base: &b {x: 1, y: 2}\nuse: {<<: *b, x: 3}\n", "m")["use"] == {
        "x": 3,
        "y": 2,
    }
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_yaml("!!python/object/apply:os.system [true]\n", "evil.yaml")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "name: 2020-13-45\n",
            r"line 1, column 7: cannot read '2020-13-45' as timestamp "
            r"\(month must be in 1..12\)",
        ),
        ("seed: 2020-02-30\n", r"as timestamp \(day is out of range for month\)"),
        ("sockets: !!int abc\n", r"line 1, column 10: cannot read 'abc' as int \(invalid "),
        ("clock_ghz: !!float abc\n", r"cannot read 'abc' as float \(could not convert"),
        ("coherence: !!bool maybe\n", r"cannot read 'maybe' as bool \(invalid\)"),
        ("name: !!timestamp notadate\n", r"cannot read 'notadate' as timestamp \(invalid\)"),
        ("a: [1, !!int zz]\n", r"line 1, column 8: cannot read 'zz' as int"),
        ("x: " + "9" * 5000 + "\n", r"'9{37}'\.\.\. as int \(Exceeds the limit"),
        ("a: 1\n\0", r": character #x0000 at position 5 is not allowed"),
        ("a: 1\x01\n", r"character #x0001 at position 4"),
    ],
)
def test_yaml_values_that_cannot_be_converted_are_one_line(text: str, says: str) -> None:
    """A scalar PyYAML resolves to a type it then fails to build (a date that does not
    exist, an explicit tag on a bad value) and a control character are errors with the
    position, not a ValueError from inside PyYAML."""
    with pytest.raises(ConfigError, match=r"^m.yaml: invalid YAML.*" + says) as err:
        parse_yaml(text, "m.yaml")
    assert "\n" not in str(err.value)


def test_every_yaml_reader_refuses_duplicate_keys(tmp_path):
    """Sweep specs, --set values and job sets all read YAML through parse_yaml."""
    from simsched.experiments import load_spec
    from simsched.jobset import load_jobset

    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n")
    assert load_spec(spec).spec.name == "s"
    spec2 = tmp_path / "s2.yaml"
    spec2.write_text(spec.read_text() + "seeds: [0]\nseeds: [1, 2]\n")
    with pytest.raises(
        ConfigError, match=r"s2.yaml: invalid YAML at line 6.*duplicate key 'seeds'"
    ):
        load_spec(spec2)
    with pytest.raises(ConfigError, match=r"^sets item .*duplicate key 'count'"):
        load_spec(spec, sets=["seeds={count: 1, count: 2}"])
    jobs = tmp_path / "j.yaml"
    jobs.write_text("jobs:\n  - {generator: fib, params: {n: 8}}\njobs: []\n")
    with pytest.raises(ConfigError, match=r"j.yaml: invalid YAML at line 3.*duplicate key 'jobs'"):
        load_jobset(jobs)


def test_output_folder_is_made_along_the_users_path(tmp_path):
    assert make_output_dir(tmp_path / "a" / "b").is_dir()
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    make_output_dir(tmp_path / "link" / "sub")  # a link to a folder is followed
    assert (real / "sub").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=f"{tmp_path / 'file'} is a file, not a folder"):
        make_output_dir(tmp_path / "file" / "sub")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_folder_the_file_system_refuses_names_the_folder_and_the_reason():
    """/proc refuses mkdir, as root too, with 'no such file or directory': this was
    reported as 'it exists and is not a folder'."""
    out = Path("/proc/simsched-test-output")
    # The folder is named when nothing is in its way (the reason may be another errno on
    # another kernel, or for another user: then the reason alone).
    refused = f"cannot create the folder (?:{out} )?\\([^)]+\\)$"
    with pytest.raises(OutputError, match=f"^{out}: {refused}"):
        make_output_dir(out)
    with pytest.raises(OutputError, match=f"^{out / 'sub' / 'r.json'}: {refused}"):
        write_text_atomic(out / "sub" / "r.json", "{}")


@pytest.mark.parametrize("depth", ["", "sub"])
def test_dangling_symlink_creates_no_folders_at_its_target(tmp_path, depth):
    """A dangling link as the output folder (or inside it) is refused, not followed."""
    (tmp_path / "dl").symlink_to(tmp_path / "target" / "a" / "b")
    out = tmp_path / "dl" / depth if depth else tmp_path / "dl"
    with pytest.raises(
        OutputError, match="is a symbolic link to .*target/a/b, which does not exist"
    ):
        make_output_dir(out)
    with pytest.raises(
        OutputError, match=f"^{out / 'r.json'}: cannot create the folder: .*does not exist"
    ):
        write_text_atomic(out / "r.json", "{}")
    assert not (tmp_path / "target").exists()


def test_dangling_symlink_as_the_file_creates_no_folders(tmp_path):
    (tmp_path / "fig.png").symlink_to(tmp_path / "nowhere" / "x.png")
    with pytest.raises(
        OutputError, match="fig.png: is a symbolic link to .*nowhere/x.png, whose folder"
    ):
        write_text_atomic(tmp_path / "fig.png", "x")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "nowhere").mkdir()  # once the folder exists, the link is written through
    write_text_atomic(tmp_path / "fig.png", "x")
    assert (tmp_path / "nowhere" / "x.png").read_text() == "x"


def _interrupt_self() -> None:
    import signal

    os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_right_after_the_temporary_is_created_leaves_nothing(tmp_path, monkeypatch):
    """Ctrl-C used to leave ``.result.json.*.tmp.json`` files: an interrupt landing between
    creating the temporary and arming its cleanup."""
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        made = real(*args, **kwargs)
        _interrupt_self()  # Ctrl-C arrives the moment the file exists
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    (tmp_path / "result.json").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(tmp_path / "result.json", {"status": "error"})
    assert _leftovers(tmp_path) == [] and (tmp_path / "result.json").read_text() == "old"


def test_second_ctrl_c_during_the_cleanup_leaves_nothing(tmp_path, monkeypatch):
    real = os.unlink

    def unlink(path, *args, **kwargs):
        _interrupt_self()  # a second Ctrl-C while the first one's cleanup runs
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(KeyboardInterrupt), atomic_output(tmp_path / "result.json") as tmp:
        tmp.write_text("half")
        raise RuntimeError("the first interrupt")
    monkeypatch.undo()
    assert _leftovers(tmp_path) == []


def test_sigterm_in_a_worker_is_deferred_the_same_way(tmp_path, monkeypatch):
    """Sweep workers turn SIGTERM into KeyboardInterrupt: the same rule holds."""
    import signal
    import tempfile

    def unwind(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, unwind)
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        made = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    try:
        with pytest.raises(KeyboardInterrupt):
            write_text_atomic(tmp_path / "row.json", "{}")
    finally:
        signal.signal(signal.SIGTERM, old)
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_yaml_alias_bomb_and_deep_nesting_are_refused_at_once():
    import time

    bomb = ["a0: &a0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"]
    for i in range(1, 9):
        bomb.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="more than 1,000,000 values once its aliases"):
        parse_yaml("\n".join(bomb), "bomb.yaml")
    with pytest.raises(ConfigError, match="nested more than 64 deep"):
        parse_yaml("d: " + "[" * 3000 + "]" * 3000, "deep.yaml")
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_yaml("d:\n" + "".join(" " * i + "- \n" for i in range(1, 800)), "deep.yaml")
    assert time.perf_counter() - t0 < 3.0
    # a few aliases, brackets inside strings and comments: fine
    assert parse_yaml("a: &x [1, 2]\nb: *x\nc: '[[[['  # {{{{\n", "ok.yaml")["b"] == [1, 2]
    assert parse_yaml("d: " + "[" * 64 + "]" * 64, "ok.yaml") is not None


@pytest.mark.parametrize(
    "text", ["a: &a [*a]", "a: &a {b: *a}", "a: &a [1, [2, *a]]", "&r [*r]", "a: &a {*a: 1}"]
)
def test_yaml_recursive_alias_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match=r"rec\.yaml: invalid YAML: .*recursive alias"):
        parse_yaml(text, "rec.yaml")


def test_yaml_shared_aliases_are_not_recursive() -> None:
    doc = parse_yaml("a: &a [1]\nb: [*a, *a, {c: *a}]\nd: &d {e: *a}\nf: [*d, *d]", "ok.yaml")
    assert doc["b"] == [[1], [1], {"c": [1]}]
    assert doc["f"] == [{"e": [1]}, {"e": [1]}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{x", "Expecting property name"),
        (b"\xff", "byte 0 is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"9" * 5000, "an integer with too many digits"),
    ],
)
def test_parse_json_turns_every_failure_into_the_given_error(data, message):
    with pytest.raises(OutputError, match=f"^f.bin: meta: not valid JSON \\({message}"):
        parse_json(data, "f.bin: meta", OutputError)
    assert parse_json(b'{"a": [1]}', "f") == {"a": [1]}


def test_check_path_refuses_what_is_no_path(tmp_path):
    """Before: Path(None) raised TypeError from pathlib, and an empty string meant the
    current folder (run(out_dir="") wrote its files there)."""
    from simsched.files import check_path

    assert check_path(tmp_path, "out_dir") == tmp_path
    assert check_path("a/b", "out_dir") == Path("a/b")
    with pytest.raises(ConfigError, match=r"^out_dir=None: expected a path \(str or os.PathLike\)"):
        check_path(None, "out_dir")
    with pytest.raises(ConfigError, match="^out_dir=b'x': expected a path"):
        check_path(b"x", "out_dir")
    with pytest.raises(ConfigError, match="^out_dir='': expected a path, got an empty string"):
        check_path("", "out_dir")


@pytest.mark.parametrize("name", ["a" * 251 + ".sst", "é" * 125 + "x.csv", "b." + "c" * 253])
def test_an_output_named_up_to_the_file_name_limit_is_written(tmp_path, name):
    """The temporary beside it repeated the whole name: at 255 bytes it was too long to
    create, and a valid output failed with "File name too long"."""
    assert len(os.fsencode(name)) == 255
    write_text_atomic(tmp_path / name, "x")
    assert (tmp_path / name).read_text() == "x" and _leftovers(tmp_path) == []
    with atomic_output(tmp_path / name) as tmp:
        tmp.write_text("y")
        left = tmp.name
        # a killed writer's temporary of such a name is still found as an orphan
        (tmp_path / (left + "x")).write_text("orphan")
    remove_orphan_temporaries(tmp_path / name)
    assert _leftovers(tmp_path) == [] and (tmp_path / name).read_text() == "y"


def test_a_write_to_the_cache_that_fails_says_it_is_the_caches(monkeypatch, tmp_path):
    """A sound cache folder with a file where a sub-folder goes ("cab") gave an error about
    a path the user never chose, without the setting that moves it; a note already given
    (the cache folder itself at fault) is not given twice."""
    root = tmp_path / "cache"
    root.mkdir()
    (root / "cab").write_text("x")
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(root))
    with pytest.raises(OutputError) as info, cache_output():
        write_json_atomic(cache_dir("cab", "f.json"), {})
    assert str(info.value) == (
        f"{root / 'cab' / 'f.json'}: cannot write (a parent is not a folder); it is in "
        "simsched's cache folder: set SIMSCHED_CACHE_DIR to a writable folder"
    )
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(root / "cab"))
    with pytest.raises(OutputError) as info, cache_output():
        make_output_dir(cache_dir("traces"))
    assert str(info.value).count("SIMSCHED_CACHE_DIR") == 1
    with cache_output():  # nothing to say when nothing failed
        assert make_output_dir(tmp_path / "fine").is_dir()


def test_a_symlink_loop_is_no_other_file(tmp_path):
    # Path.resolve raised RuntimeError("Symlink loop") before Python 3.13: `results export
    # LOOP -o x.csv` ended in a traceback instead of the read's one-line error
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert not same_file(tmp_path / "x.csv", loop)
    assert same_file(loop, loop)
    check_not_input(tmp_path / "x.csv", "--out", {"the results": loop})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1e999", "infinity"),
        ("-1E400", "infinity"),
        ("1.0e+999", "infinity"),
        ("1e-999", "read as 0"),
        ("-2.5e-400", "read as 0"),
        ("inf", None),
        ("-Infinity", None),
        (".inf", None),
        ("0", None),
        ("0.0e-999", None),
        ("1e308", None),
        ("5e-324", None),
        ("\u0661e-999", "read as 0"),  # an Arabic-Indic one, which float() reads too
    ],
)
def test_a_number_beyond_a_floats_range_is_told(text, says):
    value = float(text.replace(".inf", "inf"))
    why = float_out_of_range(text, value)
    assert (why is None) if says is None else (says in why)
    if text[0].isdigit() or text[0] == "-":
        # YAML reads the same numbers the same way (1e999 without a dot is text in YAML 1.1)
        yaml_text = text if "." in text else None
        if yaml_text is not None and "e" in text.lower() and says is not None:
            with pytest.raises(ConfigError, match="as a number: "):
                parse_yaml(f"x: {yaml_text}", "f.yaml")
