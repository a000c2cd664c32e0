"""Any corruption of a trace ends in TraceFormatError and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.cli import main
from simsched.errors import TraceFormatError
from simsched.trace import TraceBuilder, open_trace, validate
from tests.trace import forge


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
    assert "nope.sst: no such trace file" in capsys.readouterr().err.lower()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A valid trace of eight strands to damage with tests.trace.forge."""
    p = tmp_path_factory.mktemp("s") / "small.sst"
    with TraceBuilder(p, program="s") as b:
        for i in range(3):
            b.spawn()
            b.ref(0x1000 + 64 * i, 8, False, 2)
            b.instr(5)
            b.ret()
        b.sync()
    return p


def _add(name: str, strands: slice, value: int):
    def damage(parts):
        parts.tables[name][strands] += value

    return damage


def test_instruction_counts_that_wrap_around_are_refused(small, tmp_path):
    """Four strands each 2^62 instructions longer (and their tails too) add up, in int64,
    to the trace's own count plus 2^64: open and `trace validate` accepted the file and
    every scheduler ran into a "deadlock" at cycle 0."""

    def damage(parts):
        _add("strand_instr", slice(0, 4), 1 << 62)(parts)
        _add("strand_tail", slice(0, 4), 1 << 62)(parts)

    forge.assert_refused(small, damage, "instructions in all, more than", tmp_path / "w.sst")


def test_a_tail_near_2_63_does_not_cover_a_short_strand(small, tmp_path):
    """instr < refs + tail wrapped for a tail of 2^63 - 1, so any instruction count passed
    the check on open."""

    def damage(parts):
        parts.tables["strand_tail"][1] = (1 << 63) - 1

    forge.assert_refused(small, damage, "plus its tail of 9223372036854775807", tmp_path / "t.sst")


def test_more_instructions_than_the_cycle_counts_hold_are_refused(small, tmp_path):
    """A strand of 2^60 instructions passed every check and gave a run with negative idle
    cycles (2^62: a "deadlock"); a trace holds at most 2^50 instructions, on open and in
    the builder."""

    def damage(parts):
        _add("strand_instr", slice(1, 2), 1 << 60)(parts)
        _add("strand_tail", slice(1, 2), 1 << 60)(parts)

    forge.assert_refused(small, damage, "more than the 2\\^50", tmp_path / "b.sst")
    with pytest.raises(TraceFormatError, match="more than the 2\\^50"):
        with TraceBuilder(tmp_path / "big.sst", program="big") as b:
            b.ref(0x1000, 8, False)
            b.instr(1 << 50)
    with TraceBuilder(tmp_path / "ok.sst", program="ok") as b:
        b.instr((1 << 50) - 1)
    with open_trace(tmp_path / "ok.sst") as t:
        assert t.header.n_instructions == (1 << 50) - 1
