"""One routine for parameter values: what the command line, YAML and Python callers give.

Workload generators, schedulers and controllers all take named parameters with a declared
type (a generator's parameter table; a scheduler's ``param_defaults``).  Values arrive as
Python values, YAML scalars or command-line strings (``--param n=2^20``, ``--set
spawn_policy=parent-first``); :func:`coerce` turns each into the declared type or raises a
:class:`~simsched.errors.ConfigError` naming the parameter, so that every kind of plug-in
accepts and refuses the same spellings.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from simsched.errors import ConfigError

#: Largest seed accepted anywhere (run, sweeps, job sets): numpy's generators take
#: non-negative seeds and records keep them as signed 64-bit integers.
MAX_SEED = 2**63 - 1


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` as a seed in ``[0, MAX_SEED]``, else a one-line :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ConfigError(f"{name}={value!r}: expected an integer")
    if not 0 <= int(value) <= MAX_SEED:
        raise ConfigError(f"{name}={value}: must be between 0 and {MAX_SEED} (2^63 - 1)")
    return int(value)


_POW = re.compile(r"^\s*(\d+)\s*(?:\^|\*\*)\s*(\d+)\s*$")
_SHIFT = re.compile(r"^\s*(\d+)\s*<<\s*(\d+)\s*$")
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def parse_int(text: str) -> int:
    """An integer written as ``1048576``, ``1_048_576``, ``0x100000``, ``2^20``, ``2**20``
    or ``1<<20``; ``ValueError`` otherwise."""
    t = text.strip().replace("_", "")
    m = _POW.match(t)
    if m:
        base, exp = int(m.group(1)), int(m.group(2))
        if exp > 64:
            raise ValueError(text)
        return base**exp
    m = _SHIFT.match(t)
    if m:
        if int(m.group(2)) > 64:
            raise ValueError(text)
        return int(m.group(1)) << int(m.group(2))
    return int(t, 0)


def coerce(value: Any, kind: type, where: str) -> Any:
    """``value`` as a ``kind`` (bool, int, float or str).

    Parameters
    ----------
    value
        The value as given.
    kind
        The declared type.  ``str`` parameters keep their value as given (a policy may
        accept several spellings, e.g. CAB's ``bl`` = ``auto`` or a level).
    where
        What the value is, for messages (e.g. ``"scheduler 'ws': spawn_policy"``).

    Raises
    ------
    ConfigError
        The value is not of that type (booleans are not integers; floats must be whole
        to be integers; numbers must be finite).
    """
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int | np.integer) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
            return value.strip().lower() in TRUE
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if kind is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return parse_int(value)
            except ValueError:
                pass
        raise ConfigError(
            f"{where}: expected an integer (e.g. 1048576, 2^20, 1<<20), got {value!r}"
        )
    if kind is float:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
        if not math.isfinite(x):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return x
    if kind is str:
        return value
    raise TypeError(f"unsupported parameter kind {kind}")  # a bug in a parameter table
