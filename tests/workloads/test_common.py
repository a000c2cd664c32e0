"""Parameter parsing, the malloc model and the vectorised helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.workloads._common import (
    MMAP_THRESHOLD,
    PAGE,
    Heap,
    Param,
    concat_ranges,
    resolve_params,
)

SPEC = (
    Param("n", int, 8, "size", minimum=1, maximum=1 << 31),
    Param("flag", bool, True, "a switch"),
    Param("x", float, 0.5, "a number", minimum=0.0),
    Param("es", int, 4, "element", choices=(4, 8)),
    Param("derived", int, None, "derived"),
)


@pytest.mark.parametrize(
    "text,value",
    [
        ("1048576", 1 << 20),
        ("2^20", 1 << 20),
        ("2**20", 1 << 20),
        ("1<<20", 1 << 20),
        ("1_000", 1000),
        ("0x40", 64),
        (" 12 ", 12),
    ],
)
def test_integers_from_strings(text, value):
    assert resolve_params("w", SPEC, {"n": text})["n"] == value


def test_defaults_bools_and_floats():
    p = resolve_params("w", SPEC, {"flag": "no", "x": "0.25", "es": "8"})
    assert p == {"n": 8, "flag": False, "x": 0.25, "es": 8, "derived": None}
    assert resolve_params("w", SPEC, {"flag": "TRUE"})["flag"] is True


@pytest.mark.parametrize(
    "given_,match",
    [
        ({"n": "lots"}, "workload w: parameter n: expected an integer"),
        ({"n": 0}, "parameter n: must be at least 1"),
        ({"n": "2^40"}, "parameter n: must be at most"),
        ({"n": True}, "parameter n: expected an integer"),
        ({"n": 2.5}, "parameter n: expected an integer"),
        ({"flag": "maybe"}, "parameter flag: expected true or false"),
        ({"x": "nan"}, "parameter x: expected a finite number"),
        ({"x": "-1"}, "parameter x: must be at least 0.0"),
        ({"es": 5}, "parameter es: must be one of 4, 8"),
        ({"size": 3}, "unknown parameter 'size'"),
    ],
)
def test_errors_name_the_parameter(given_, match):
    with pytest.raises(ConfigError, match=match):
        resolve_params("w", SPEC, given_)


def test_malloc_model():
    h = Heap()
    big = h.malloc("big", 10 * MMAP_THRESHOLD)
    big2 = h.malloc("big2", MMAP_THRESHOLD)
    small = h.malloc("small", 100)
    small2 = h.malloc("small2", 1)
    aligned = h.malloc("aligned", 5 * MMAP_THRESHOLD, align=64)
    # glibc: mmap-ed chunks return page start + 16; brk chunks are 16-byte aligned
    assert big.base % PAGE == 16 and big2.base % PAGE == 16
    assert big2.end <= big.base  # the mmap area grows downwards
    assert small.base % 16 == 0 and small2.base >= small.end and small2.base % 16 == 0
    assert aligned.base % 64 == 0
    spans = sorted((r.base, r.end) for r in h.regions.values())
    assert all(e1 <= b2 for (_, e1), (b2, _) in zip(spans, spans[1:], strict=False))
    assert set(h.as_json()) == {"big", "big2", "small", "small2", "aligned"}
    with pytest.raises(ValueError):
        h.malloc("big", 8)


@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 6)), max_size=20))
def test_concat_ranges_is_concatenated_aranges(pairs):
    starts = np.array([s for s, _ in pairs], np.int64)
    lens = np.array([n for _, n in pairs], np.int64)
    expect = [x for s, n in pairs for x in range(s, s + n)]
    assert concat_ranges(starts, lens).tolist() == expect
