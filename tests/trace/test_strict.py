"""What a trace may not say, and what a builder may not be asked, beyond the DAG structure.

Each case was silently accepted before: reserved bytes, unknown flag bits, index padding,
meta fields of the wrong type or unknown, main's branching degree, a content digest that
does not match (``validate`` refused it, ``open_trace`` and ``run`` did not), references
recorded after ``close``, NaN gaps, and a named pipe given as a trace (which blocked).
"""

from __future__ import annotations

import os
import re
import zlib

import numpy as np
import pytest

from simsched.errors import TraceBuildError, TraceFormatError
from simsched.trace import TraceBuilder, open_trace, validate
from simsched.trace import format as fmt
from tests.blocking import raised_within
from tests.trace import forge


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    p = tmp_path_factory.mktemp("s") / "good.sst"
    with TraceBuilder(p, chunk_refs=16) as b:
        for i in range(2):
            b.spawn()
            b.refs(np.arange(20) * 64 + 4096 * i, 8, False, 1)
            b.ret()
        b.sync()
    return p


def _meta(key, value):
    def f(parts):
        parts.meta[key] = value

    return f


def _flags(parts):
    parts.flags |= 0x10


def _pad(parts):
    parts.index["pad"][1] = 7


def _main_branching(parts):
    parts.tables["frame_branching"][0] = -1


SEALED = {
    "unknown flag bits": (
        _flags,
        "unknown flag bits 0x10 in the header \\(version 3 defines 0x7\\)",
    ),
    "stack flag without a region": (
        lambda parts: setattr(parts, "flags", parts.flags | fmt.FLAG_STACK),
        "the header's stack flag and the meta field 'stack' disagree \\(flag set, field absent\\)",
    ),
    "stack region without the flag": (
        _meta("stack", [4096, 8192]),
        "stack flag and the meta field 'stack' disagree \\(flag clear, field present\\)",
    ),
    "stack region backwards": (
        _meta("stack", [8192, 4096]),
        "meta field 'stack' is \\[8192, 4096\\], not \\[lo, hi\\]",
    ),
    "index padding": (_pad, "chunk 1: the index row's padding is not zero"),
    "writer not a string": (_meta("writer", 5), "meta field 'writer' is int, expected str"),
    "unknown meta field": (_meta("colour", "red"), "unknown meta field\\(s\\) 'colour'"),
    "main branching -1": (_main_branching, "frame 0 \\(main\\) has branching -1"),
}


@pytest.mark.parametrize("case", sorted(SEALED))
def test_sealed_damage_is_refused(tmp_path, good, case):
    damage, message = SEALED[case]
    forge.assert_refused(good, damage, message, tmp_path / "bad.sst")


def _with_crc(head: bytearray) -> bytes:
    head[16:20] = b"\0\0\0\0"
    head[16:20] = zlib.crc32(bytes(head)).to_bytes(4, "little")
    return bytes(head)


@pytest.mark.parametrize("at", [20, 23, 152, 159])
def test_nonzero_reserved_header_bytes_are_refused(tmp_path, good, at):
    data = bytearray(good.read_bytes())
    head = bytearray(data[: fmt.HEADER_SIZE])
    head[at] = 1
    bad = tmp_path / "bad.sst"
    bad.write_bytes(_with_crc(head) + bytes(data[fmt.HEADER_SIZE :]))
    with pytest.raises(TraceFormatError, match="reserved header bytes .* are not zero"):
        open_trace(bad)


def _wrong_digest(good, path):
    data = bytearray(good.read_bytes())
    head = bytearray(data[: fmt.HEADER_SIZE])
    head[120] ^= 1  # the digest, with a valid header CRC
    path.write_bytes(_with_crc(head) + bytes(data[fmt.HEADER_SIZE :]))
    return path


def test_open_checks_the_content_digest(tmp_path, good):
    bad = _wrong_digest(good, tmp_path / "bad.sst")
    with pytest.raises(TraceFormatError, match="content digest mismatch"):
        open_trace(bad)
    with pytest.raises(TraceFormatError, match="content digest mismatch"):
        validate(bad)


def test_a_file_changed_in_place_is_checked_again(tmp_path, good):
    p = tmp_path / "t.sst"
    p.write_bytes(good.read_bytes())
    open_trace(p).close()  # verified once, remembered
    _wrong_digest(good, p)
    os.utime(p, ns=(1, 1))  # a new version even where mtime resolution is coarse
    with pytest.raises(TraceFormatError, match="content digest mismatch"):
        open_trace(p)


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.sst"
    os.mkfifo(fifo)
    out = raised_within(lambda: open_trace(fifo), "open_trace of a named pipe")
    assert isinstance(out[0], TraceFormatError)
    assert str(out[0]) == f"{fifo}: is a named pipe, not a trace (a regular file)"


def test_a_device_is_refused():
    with pytest.raises(TraceFormatError, match="/dev/null: is a device, not a trace"):
        open_trace("/dev/null")


def _closed(tmp_path):
    b = TraceBuilder(tmp_path / "c.sst")
    b.close()
    return b


@pytest.mark.parametrize(
    "action",
    [
        lambda b: b.ref(64, 8, False),
        lambda b: b.refs([64, 128], 8, False),
        lambda b: b.instr(3),
        lambda b: b.spawn(),
    ],
)
def test_builder_refuses_calls_after_close(tmp_path, action):
    b = _closed(tmp_path)
    with pytest.raises(TraceBuildError, match="the trace builder is closed"):
        action(b)


def test_builder_refuses_calls_after_close_outside_the_roi(tmp_path):
    b = TraceBuilder(tmp_path / "r.sst", roi=True)
    b.close()
    with pytest.raises(TraceBuildError, match="closed"):
        b.ref(64, 8, False)


NAN = float("nan")


@pytest.mark.parametrize(
    "action, message",
    [
        (lambda b: b.ref(64, 8, False, gap=NAN), "instruction gap nan is not an integer"),
        (lambda b: b.ref(64, 8, False, gap=1.5), "instruction gap 1.5 is not an integer"),
        (lambda b: b.refs([64, 72], 8, False, [1.0, NAN]), "instruction gap nan is not an"),
        (lambda b: b.refs([64, 72], 8, False, NAN), "instruction gap nan is not an integer"),
        (lambda b: b.refs([64, 72], 8, False, [1, 2.5]), "instruction gap 2.5 is not an"),
        (lambda b: b.refs([64, 72], 8, False, 1e30), "instruction gap does not fit 32 bits"),
        (lambda b: b.refs([64], 8, False, "x"), "instruction gaps of type <U1 are not"),
        (lambda b: b.instr(NAN), "instruction count nan is not an integer"),
        # a bool counted as 1, where every other count refuses it
        (lambda b: b.instr(True), "instruction count True is not an integer"),
        (lambda b: b.ref(64, True, False), "reference size True is not an integer"),
        (lambda b: b.ref(64, 8, False, gap=True), "instruction gap True is not an integer"),
        # a float address was truncated (4096.7 became 4096) and a string one parsed by
        # numpy or failed with a TypeError; the trace was written either way
        (lambda b: b.ref("0x1000", 8, False), "reference address '0x1000' is not an integer"),
        (lambda b: b.ref(4096.7, 8, False), "reference address 4096.7 is not an integer"),
        (lambda b: b.ref(4096, 8.0, False), "reference size 8.0 is not an integer"),
        (lambda b: b.refs([4096.7, 8192.0], 8, False), "reference addresses of type float64"),
        (lambda b: b.refs(["4096"], 8, False), "reference addresses of type <U4 are not"),
        (lambda b: b.refs([True], 8, False), "reference addresses of type bool are not"),
        (lambda b: b.refs([64], [8.5], False), "reference sizes of type float64 are not"),
        (lambda b: b.refs(np.array([64, "x"], object), 8, False), "reference address 'x' is"),
    ],
)
def test_builder_refuses_non_integer_numbers(tmp_path, action, message):
    p = tmp_path / "g.sst"
    with pytest.raises(TraceBuildError, match=f"^{re.escape(str(p))}: {re.escape(message)}"):
        with TraceBuilder(p) as b:
            action(b)
    assert not p.exists()


def test_builder_takes_integers_of_any_width(tmp_path):
    p = tmp_path / "a.sst"
    with TraceBuilder(p) as b:
        b.ref(np.int64(64), np.uint8(8), False)
        b.refs(np.array([128], np.uint32), np.array([4], np.int16), True)
        b.refs(np.array([2**48 - 8], object), 8, False)
    with open_trace(p) as t:
        assert t.refs(0, 3).addr.tolist() == [64, 128, 2**48 - 8]


def test_whole_float_gaps_are_still_accepted(tmp_path):
    p = tmp_path / "f.sst"
    with TraceBuilder(p) as b:
        b.refs([64, 72], 8, False, np.array([1.0, 3.0]))
    with open_trace(p) as t:
        assert t.refs(0, 2).gap.tolist() == [1, 3]
