"""Helpers shared by the command modules: JSON output, key=value options, option types.

The consoles and :func:`print_table` live in :mod:`simsched.cli._table` (rich alone, no
typer) and are re-exported here for the command modules.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from simsched.canonical import strict_json
from simsched.cli._table import console as console  # re-exported for the command modules
from simsched.cli._table import err_console as err_console
from simsched.cli._table import print_table as print_table
from simsched.cli._table import print_warning as print_warning
from simsched.errors import ConfigError, float_out_of_range
from simsched.files import NumberOutOfRange, parse_yaml
from simsched.params import check_line_size

#: Options shared by the commands that take one machine (``memsim``, ``calibrate``).
MachineOpt = Annotated[str, typer.Option("--machine", "-m", help="preset name or YAML file")]
MachineSetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="override a machine field: key=value")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


#: ``--progress/--no-progress`` of the long-running commands.
ProgressOpt = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="report progress on stderr: a bar at a terminal, else a line every 10 s "
        "(default: only at a terminal)",
    ),
]


def want_progress(flag: bool | None) -> bool:
    """Whether to report progress: as asked, else only when stderr is a terminal."""
    return sys.stderr.isatty() if flag is None else flag


def print_json(obj: Any) -> None:
    """Print one JSON document on stdout: sorted keys, numpy values as numbers, NaN as null
    (:func:`simsched.canonical.strict_json`)."""
    print(strict_json(obj))


class WrittenFloat(float):
    """A number read from the command line that keeps its text (``text``), so that a
    message refusing it echoes what the user wrote (``-K -1``, not ``-1.0``)."""

    text: str

    def __new__(cls, text: str) -> WrittenFloat:
        obj = super().__new__(cls, text)
        obj.text = text.strip()
        return obj


def written_float(text: str | float) -> float:
    """Typer's parser of a float option whose text the command may echo (:class:`WrittenFloat`);
    the default, already a number, passes as it is.

    Raises
    ------
    ValueError
        ``text`` is not a number (typer reports it as an invalid value of the option).
    """
    if isinstance(text, float):
        return text
    try:
        value = WrittenFloat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    why = float_out_of_range(text, value)
    if why is not None:
        raise ValueError(f"{value.text} is {why}")
    return value


def as_written(value: float) -> str:
    """``value`` as the user wrote it (:class:`WrittenFloat`), else as Python prints it."""
    return value.text if isinstance(value, WrittenFloat) else str(value)


def parse_value(text: str) -> Any:
    """Interpret a command-line value: int, float, true/false, null, else the string."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_kv(items: list[str] | None, option: str) -> dict[str, Any]:
    """Parse repeated ``key=value`` options into a dict, naming the option on errors: a
    value is read by :func:`parse_value`, or as YAML when it is a list or mapping."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} {item!r}: expected key=value")
        if key.strip() in out:
            raise ConfigError(f"{option} {key.strip()}: given twice")
        out[key.strip()] = _value(value.strip(), f"{option} {item!r}")
    return out


def _value(raw: str, source: str) -> Any:
    """A list or mapping (``[]``, ``[{name: L1, ...}]``) read as YAML, as ``sweep --set``
    reads it, else :func:`parse_value`'s reading; a text that is no YAML (``[draft] two
    cores``) stays text, for the field to take or name."""
    if raw.startswith(("[", "{")):
        try:
            return parse_yaml(raw, source)
        except NumberOutOfRange:
            raise
        except ConfigError:
            return raw
    value = parse_value(raw)
    why = float_out_of_range(raw, value) if isinstance(value, float) else None
    if why is not None:
        raise ConfigError(f"{source}: {raw} is {why}")
    return value


def check_line(line: int | None, option: str = "--line") -> int | None:
    """A cache-line size from the command line: a power of two from 4 to 65536 bytes."""
    return None if line is None else check_line_size(line, f"{option} {line}")


def plugin_warnings(*registries: Any) -> None:
    """One line on stderr per plug-in of ``registries`` (:class:`simsched.registry.Registry`)
    that failed to load, so that a listing says why an outside policy or generator is
    missing from it."""
    for registry in registries:
        for name, error in sorted(registry.plugin_errors().items()):
            err_console.print(
                f"simsched: warning: {registry.kind} plug-in {name!r} ({registry.group}) "
                f"failed to load: {error}"
            )
