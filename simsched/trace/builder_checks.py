"""The argument checks of :class:`~simsched.trace.TraceBuilder`: what a trace's header and
meta section can hold, and the arguments of :meth:`~simsched.trace.TraceBuilder.refs`.

Apart from the builder so that it keeps the DAG's rules alone (docs/trace-format.md); the
raw importer checks a header's fields with :func:`check_meta` before it reads a record.
Each check turns what numpy, ``json`` or a later comparison would have said deep inside (or
taken without a word) into one line naming the argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from simsched.canonical import plain_strict
from simsched.errors import ConfigError, shown
from simsched.params import check_int, check_mapping, is_one_line, is_utf8
from simsched.trace import structure

__all__ = ["check_meta", "flags", "json_params", "per_reference", "writer_name"]


def per_reference(name: str, x: np.ndarray, n: int) -> np.ndarray:
    """``x``, an argument of :meth:`TraceBuilder.refs`, if it is one value (broadcast) or
    one per address (``n``), else a :class:`ConfigError` naming it: numpy's broadcast
    error named neither the argument nor the counts.  A 1-element array is one value, as
    numpy broadcasts it."""
    if x.shape == (1,) and n != 1:
        return x.reshape(())
    if x.ndim and x.shape != (n,):
        k = x.shape[0]
        got = f"{k} value{'s' if k != 1 else ''}" if x.ndim == 1 else f"an array of shape {x.shape}"
        raise ConfigError(
            f"{name}: {got} for {n} address{'es' if n != 1 else ''}; expected one value or "
            "one per address"
        )
    return x


def flags(name: str, x: ArrayLike) -> np.ndarray:
    """``x``, an argument of :meth:`TraceBuilder.refs`, as a bool array if it holds
    booleans (True, False, numpy bools, or a list or array of them), else a
    :class:`ConfigError` naming it: ``np.asarray(x, dtype=bool)`` took ``"no"`` as True and
    ``[0, 2]`` as a read and a write."""
    if x is True or x is False:
        return np.asarray(x)
    a = np.asarray(x)
    if a.dtype != np.bool_ and not (a.size == 0 and a.dtype.kind == "f"):  # [] is float64
        got = shown(x) if a.ndim == 0 else f"an array of {a.dtype}"
        raise ConfigError(f"{name}: expected True, False or an array of them, got {got}")
    return a.astype(bool, copy=False)


def writer_name(v: str) -> str:
    """The meta section's ``writer`` for simsched version ``v``: its release, not its commit.

    A development version (``0.1.1.dev568+gb76f7ea9d``) is named by the release it leads
    to, ``simsched 0.1.1 (development)``: with the commit in it, the same trace written
    by two commits had other bytes and another digest, so records of one trace looked like
    records of two (``compare --out`` added points instead of replacing them, cached
    baselines were not found).  Results name the exact version (``simsched_version``).
    """
    m = re.match(r"(\d+(?:\.\d+)*)(.*)", v)
    if m is None:
        return f"simsched {v}"
    base, rest = m.groups()
    return f"simsched {base}" + (" (development)" if rest else "")


def check_meta(program: Any, args: Any, line_size_hint: Any, backend: Any = "synthetic") -> int:
    """Refuse what a trace's header cannot hold; returns ``line_size_hint`` as an int.

    For :class:`TraceBuilder` and for the raw importer, which checks them before it reads
    a record (a wrong argument was reported as a fault of the raw stream).

    Raises
    ------
    ConfigError
        A program or backend name that is not one line of text (a newline reached the
        comparison's titles and the results' CSV), arguments given as one string (its
        letters became the arguments: "x y" was ('x', ' ', 'y')), or a line size that is
        not a power of two up to 2^20.
    """
    for name, text in (("program", program), ("backend", backend)):
        # UTF-8: the name is a column of the results' Parquet table, which cannot hold the
        # lone surrogates a byte that is not UTF-8 becomes (params.name_text writes them out)
        if not isinstance(text, str) or not is_one_line(text) or not is_utf8(text):
            raise ConfigError(f"{name}={shown(text)}: expected one line of UTF-8 text")
    if isinstance(args, str | bytes) or not isinstance(args, Iterable):
        raise ConfigError(f"args={shown(args)}: expected a list of the program's arguments")
    hint = check_int("line_size_hint", line_size_hint, 1)
    if not structure.line_hint_ok(hint):
        raise ConfigError(f"line_size_hint={hint} must be a power of 2 up to 2^20")
    return hint


def json_params(params: Any) -> dict[str, Any]:
    """``params`` as the trace's meta section will hold them (JSON: numpy values as plain
    numbers), refused up front when they are not JSON: they failed in ``close()``, after
    all the program's references were written."""
    given = check_mapping(params, "params")  # a list or a text was stored as it was
    try:
        return json.loads(json.dumps(given, sort_keys=True, default=plain_strict))
    except (TypeError, ValueError) as exc:  # an object, or keys sort_keys cannot order
        raise ConfigError(
            f"params: {exc} (a trace's params are JSON: text, numbers, booleans, lists and "
            "mappings with text keys)"
        ) from None
