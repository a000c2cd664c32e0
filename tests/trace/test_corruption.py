"""Any corruption of a trace ends in TraceFormatError and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.cli import main
from simsched.errors import TraceFormatError
from simsched.trace import TraceBuilder, open_trace, validate


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    p = tmp_path_factory.mktemp("c") / "good.sst"
    rng = np.random.default_rng(7)
    with TraceBuilder(p, chunk_refs=300, program="c") as b:
        for _ in range(4):
            b.spawn()
            b.refs(rng.integers(0, 1 << 40, 500, dtype=np.uint64), 8, False, 3)
            b.ret()
        b.sync()
    return p.read_bytes()


def _check(tmp_path, data: bytes) -> None:
    p = tmp_path / "bad.sst"
    p.write_bytes(data)
    try:
        with open_trace(p) as t:
            validate(t)
            for _ in t.iter_chunks():
                pass
    except TraceFormatError as exc:
        assert str(p) in str(exc)
        return
    raise AssertionError("corruption went unnoticed")


@given(cut=st.integers(min_value=0, max_value=10_000))
def test_truncation(tmp_path_factory, good, cut):
    cut = cut % len(good)
    _check(tmp_path_factory.mktemp("t"), good[:cut])


@given(pos=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_bit_flip(tmp_path_factory, good, pos, bit):
    pos %= len(good)
    data = bytearray(good)
    data[pos] ^= 1 << bit
    _check(tmp_path_factory.mktemp("f"), bytes(data))


def test_wrong_magic_and_version(tmp_path, good):
    with pytest.raises(TraceFormatError, match="bad magic"):
        p = tmp_path / "m.sst"
        p.write_bytes(b"NOTTRACE" + good[8:])
        open_trace(p)
    data = bytearray(good)
    data[8] = 9
    p = tmp_path / "v.sst"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match="version 9"):
        open_trace(p)


def test_cli_reports_truncation_in_one_line(tmp_path, good, capsys):
    p = tmp_path / "bad.sst"
    p.write_bytes(good[:1000])
    with pytest.raises(SystemExit) as exc:
        main(["trace", "info", str(p)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(p) in err and "truncated" in err


def test_cli_missing_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["trace", "info", str(tmp_path / "nope.sst")])
    assert exc.value.code == 2
    assert "no such file" in capsys.readouterr().err.lower()
