"""Trace inputs the commands used to hang on or accept: one line and exit status 2 now."""

from __future__ import annotations

import os
import zlib

from simsched.trace import format as fmt
from tests.cli.conftest import run_process
from tests.cli.test_errors import one_line


def test_trace_info_on_a_named_pipe_fails_at_once(tmp_path):
    fifo = tmp_path / "pipe.sst"
    os.mkfifo(fifo)
    res = run_process("trace", "info", fifo, timeout=60)  # used to block forever
    assert res.returncode == 2
    assert one_line(res.stderr).endswith(f"{fifo}: is a named pipe, not a trace (a regular file)")


def test_run_refuses_a_trace_whose_digest_does_not_match(cli, fib_trace, tmp_path):
    data = bytearray(fib_trace.read_bytes())
    data[120] ^= 1  # the content digest; the header CRC made valid again
    data[16:20] = b"\0\0\0\0"
    data[16:20] = zlib.crc32(bytes(data[: fmt.HEADER_SIZE])).to_bytes(4, "little")
    bad = tmp_path / "bad.sst"
    bad.write_bytes(bytes(data))
    for args in (["run", "-t", bad, "-m", "itrs-scaling-2"], ["trace", "validate", bad]):
        code, _, err = cli(*args)
        assert code == 2
        assert one_line(err).endswith(
            f"{bad}: content digest mismatch (file changed after it was written)"
        )


def test_trace_gen_refuses_fib_40_naming_the_estimate(cli, tmp_path, monkeypatch):
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: 64 * 2**30)
    out = tmp_path / "fib.sst"
    code, _, err = cli("trace", "gen", "fib", "--param", "n=40", "-o", out)
    assert code == 2
    assert "fib (n=40, cutoff=2): generating it needs about 616.9 GB of memory" in one_line(err)
    assert not out.exists()


def test_trace_gen_refuses_days_of_references_naming_them(cli, tmp_path, monkeypatch):
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: None)  # only the count refuses
    out = tmp_path / "g.sst"
    code, _, err = cli(
        "trace", "gen", "datapar", "-p", "n=1000000", "-p", "elems=1000000", "-o", out
    )
    assert code == 2
    assert one_line(err).endswith(
        "datapar (n=1000000, elems=1000000, reps=4, init=True): its trace would hold "
        "9,000,000,000,000 references (9.0e+12), more than the 4e+12 a generated trace may "
        "have: about 2 days of generating at the 45 M references a second measured on a "
        "2-core host (smaller sizes: `simsched trace gen datapar --list`)"
    )
    assert not out.exists()
