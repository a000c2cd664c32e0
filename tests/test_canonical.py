"""The JSON forms simsched hashes (canonical) and prints (strict)."""

from __future__ import annotations

import json
import math
from pathlib import PurePosixPath

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.canonical import canonical_json, strict_json


def _strict_loads(text: str):
    """Parse as a strict reader would: a bare NaN or Infinity is an error."""

    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_missing_values_print_as_null_whatever_their_type():
    value = {
        "py": float("nan"),
        "f64": np.float64("-inf"),
        "f32": np.float32("nan"),  # not a Python float: reaches json's default
        "arr": np.array([1.0, np.nan, np.inf]),
        "tup": (float("inf"), 2),
        "ok": [np.int64(3), np.float32(0.5), PurePosixPath("a/b"), None, "NaN"],
    }
    assert _strict_loads(strict_json(value)) == {
        "py": None,
        "f64": None,
        "f32": None,
        "arr": [1.0, None, None],
        "tup": [None, 2],
        "ok": [3, 0.5, "a/b", None, "NaN"],
    }


def test_key_order_sorted_by_default_kept_on_request():
    assert strict_json({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert strict_json({"b": 1, "a": 2}, sort_keys=False) == '{"b": 1, "a": 2}'


def test_objects_that_are_not_json_are_an_error():
    with pytest.raises(TypeError, match="object is not JSON serialisable"):
        strict_json({"x": object()})


_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=4)
)
_values = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


def _nulled(x):
    if isinstance(x, dict):
        return {k: _nulled(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nulled(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


@given(_values)
def test_strict_json_is_canonical_json_with_missing_values_nulled(value):
    # every reader accepts it, and apart from the non-finite floats it says what the
    # canonical (hashed) form says
    parsed = _strict_loads(strict_json(value))
    assert parsed == _nulled(value)
    assert parsed == json.loads(canonical_json(_nulled(value)))
