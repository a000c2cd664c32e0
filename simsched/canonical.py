"""Canonical JSON: the one text form simsched hashes and stores nested values in.

Sorted keys, no spaces, numpy scalars and arrays as plain numbers and lists, paths as
strings.  Point ids, cache keys and the nested fields of a record are all this text (or its
hash), so two equal values always give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import PurePath
from typing import Any


def plain_strict(x: Any) -> Any:
    """``json`` default: numpy values as Python numbers and lists, paths as text; anything
    else is a ``TypeError`` (a result record holds nothing else)."""
    # A numpy value exists only once numpy has been imported: looking it up instead of
    # importing it keeps commands that never touch numpy (``--version``) from loading it.
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.generic):
        return x.item()
    if np is not None and isinstance(x, np.ndarray):
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
