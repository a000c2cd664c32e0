"""Canonical JSON: the one text form simsched hashes and stores nested values in.

Sorted keys, no spaces, numpy scalars and arrays as plain numbers and lists, paths as
strings.  Point ids, cache keys and the nested fields of a record are all this text (or its
hash), so two equal values always give the same bytes.

:func:`strict_json` is the form simsched *prints*: the same conversions, and a missing value
(NaN, infinity) as ``null``, because Python's ``json`` writes a bare ``NaN`` that other
readers (``jq``, JavaScript, most JSON libraries) refuse.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import PurePath
from typing import Any


def numpy_instance(x: Any, *kinds: str) -> bool:
    """Whether ``x`` is an instance of one of numpy's classes ``kinds`` (``"generic"``,
    ``"integer"``, ``"ndarray"``...).

    A numpy value exists only once numpy has been imported: looking it up instead of
    importing it keeps commands that never touch numpy (``--version``, ``machine list``)
    from loading it.
    """
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, tuple(getattr(np, k) for k in kinds))


def plain_strict(x: Any) -> Any:
    """``json`` default: numpy values as Python numbers and lists, paths as text; anything
    else is a ``TypeError`` (a result record holds nothing else)."""
    if numpy_instance(x, "generic"):
        return x.item()
    if numpy_instance(x, "ndarray"):
        return x.tolist()
    if isinstance(x, PurePath):
        return str(x)
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def plain(x: Any) -> Any:
    """``json`` default: as :func:`plain_strict`, and anything else as text."""
    try:
        return plain_strict(x)
    except TypeError:
        # YAML dates and similar scalars: their text is their identity in a spec.
        return str(x)


def canonical_json(value: Any, *, strict: bool = False) -> str:
    """JSON with sorted keys and no spaces (see the module docstring); ``strict``: values
    that are not JSON, numpy or paths are a ``TypeError`` instead of their text."""
    default = plain_strict if strict else plain
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=default)


def content_hash(value: Any, length: int = 16) -> str:
    """Hex SHA-256 prefix of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float (numpy's too) replaced by ``None``."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, float):  # numpy's float64 is a float too
        return x if math.isfinite(x) else None
    if numpy_instance(x, "generic", "ndarray"):
        return _finite(plain_strict(x))
    return x


def strict_json(value: Any, *, sort_keys: bool = True) -> str:
    """``value`` as one line of JSON that every reader accepts.

    Parameters
    ----------
    value
        Dicts, lists, strings, numbers, ``None``, numpy values and paths.
    sort_keys
        Sort dict keys (the CLI's form); ``False`` keeps their order.

    Returns
    -------
    str
        JSON in which NaN and infinities are ``null`` and numpy values are plain numbers and
        lists (:func:`plain_strict`); any other object is a ``TypeError``.
    """
    return json.dumps(_finite(value), sort_keys=sort_keys, allow_nan=False, default=plain_strict)
