"""One routine for parameter values: what the command line, YAML and Python callers give.

Workload generators, schedulers and controllers all take named parameters with a declared
type (a generator's parameter table; a scheduler's ``param_defaults``).  Values arrive as
Python values, YAML scalars or command-line strings (``--param n=2^20``, ``--set
spawn_policy=parent-first``); :func:`coerce` turns each into the declared type or raises a
:class:`~simsched.errors.ConfigError` naming the parameter, so that every kind of plug-in
accepts and refuses the same spellings.  A policy declares its parameters once, as a
:class:`ParamSchema` of :class:`Param` s (type from the default, bounds or choices, one
line of documentation): the schema resolves and checks what a user gives and documents
itself (``simsched schedulers --params``, docs/schedulers.md).  :func:`check_int` and :func:`check_ints` are the
validators of counts that the policies' pure functions (schedulers) and the engine's
allotment functions share; they live here, below both layers.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from simsched.canonical import canonical_json, numpy_instance
from simsched.errors import ConfigError, float_out_of_range, shown, utf8_text

if TYPE_CHECKING:
    import numpy as np

#: Largest seed accepted anywhere (run, sweeps, job sets): numpy's generators take
#: non-negative seeds and records keep them as signed 64-bit integers.
MAX_SEED = 2**63 - 1

#: Longest quantum accepted, in cycles (2^40: about nine minutes at 2 GHz).  A quantum is
#: added to the current cycle, and a bigger one (a job file's ``quantum: 2**63``)
#: overflowed the engine's 64-bit cycle counts.
MAX_QUANTUM = 2**40

#: Latest arrival cycle of a job (and largest Poisson mean a job set may give): far beyond
#: any replay (2^60 cycles are 13 years at 2.7 GHz) and far below the engine's "never"
#: (2^62), so that every job arrives at a cycle the event loop can reach.  The job-set
#: schema and the engine (for jobs given to it directly) both check it.
MAX_ARRIVAL = 2**60


def check_line_size(line: Any, where: str) -> int:
    """``line`` as a cache-line size, a power of two from 4 to 65536 bytes, else a
    one-line :class:`ConfigError` that begins with ``where`` (``"--line 48"`` on the
    command line, ``"line=48"`` in the Python API)."""
    rule = "a line size is a power of two from 4 to 65536 bytes"
    if isinstance(line, bool) or not isinstance(line, numbers.Integral):
        # '64' or 64.0 read as a wrong number of bytes; say what is wrong with it
        raise ConfigError(f"{where}: expected an integer ({rule})")
    if not (4 <= int(line) <= 65536 and is_power_of_two(int(line))):
        raise ConfigError(f"{where}: {rule}")
    return int(line)


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` as a seed in ``[0, MAX_SEED]``, else a one-line :class:`ConfigError`."""
    return check_int(name, value, 0, MAX_SEED)


def is_flag(value: Any) -> bool:
    """Whether ``value`` is a Python or numpy bool (``0``, ``1`` and ``"no"`` are not)."""
    return isinstance(value, bool) or numpy_instance(value, "bool_")


def check_flag(value: Any, name: str) -> bool:
    """``value`` (a Python or numpy bool) as a ``bool``, else a one-line
    :class:`ConfigError` naming ``name``: the yes/no arguments of the Python API, where
    ``refresh="no"`` or ``retry_failed=0`` was taken as its truth value without a word."""
    if is_flag(value):
        return bool(value)
    raise ConfigError(f"{name}={shown(python_scalars(value))}: expected True or False")


def check_callable(value: Any, name: str) -> Any:
    """``value`` if it is None or callable, else a one-line :class:`ConfigError` naming
    ``name``: a callback (``progress``, ``warn``) of another type failed only when first
    called, deep inside the work ("'int' object is not callable")."""
    if value is not None and not callable(value):
        raise ConfigError(f"{name}={shown(value)}: expected a function or None")
    return value


def check_mapping(value: Any, name: str) -> dict[str, Any]:
    """``value`` (a mapping of names to values; None: empty) as a dict, else a one-line
    :class:`ConfigError` naming ``name``: the dict parameters of the Python API
    (scheduler and controller parameters, machine overrides)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name}={shown(value)}: expected a mapping (dict) of names to values")
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(f"{name}: key {shown(key)} is not a string")
    return dict(value)


def check_recordable(values: dict[str, Any], name: str) -> dict[str, Any]:
    """``values`` (a checked mapping: :func:`check_mapping`) if a record can keep every value
    of it as JSON (text, numbers, flags, None, lists and mappings of them, numpy values),
    else a one-line :class:`ConfigError` naming ``name`` and the key.

    A run's record keeps the parameters as given before the scheduler checks them (a
    failed run's record too), and a value JSON has no form for (``{"bl": {1}}``, an
    object) was a ``TypeError`` from the JSON encoder with its traceback.
    """
    for key, value in values.items():
        try:
            canonical_json(value, strict=True)
        except (TypeError, ValueError):  # ValueError: a list or mapping that holds itself
            raise ConfigError(
                f"{name}: {key}={shown(value)}: expected text, a number, true/false, None, "
                "or a list or mapping of them"
            ) from None
    return values


def check_strings(value: Any, name: str, form: str) -> list[str]:
    """``value`` (a list or tuple of strings; None: empty) as a list, else a one-line
    :class:`ConfigError` naming ``name`` and the ``form`` of an item (``"key=value"``): the
    lists of option strings of the Python API (a sweep's ``sets``, a filter's ``wheres``).
    A lone string is refused: iterating it would give its characters."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{name}={shown(value)}: expected a list of {form!r} strings")
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(f"{name}: item {shown(item)} is not a {form!r} string")
    return list(value)


def env_flag(name: str, default: bool, on: str = "1") -> bool:
    """The on/off switch of environment variable ``name``: 1, true, yes or on; 0, false,
    no or off (any case, spaces around ignored); unset or empty: ``default``.

    Raises
    ------
    ConfigError
        Any other value, named (``on`` says what 1 means: ``"1 (small runs)"``): a typo
        such as ``ture`` or ``off`` where only ``0`` was read meant the other setting
        without a word.
    """
    value = os.environ.get(name, "")
    v = value.strip().lower()
    if not v:
        return default
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={value!r}: expected {on} or 0, true or false, yes or no, on or off")


def check_arguments(value: Any, name: str, what: str) -> list[str]:
    """``value`` (a list or tuple of command-line arguments) as a list of strings, else a
    one-line :class:`ConfigError` naming ``name`` and saying ``what`` was expected
    (``"the program's arguments"``): the argument lists the Python API hands to a program
    or a compiler.

    A lone string is refused (iterating it gave its characters, each one argument), and
    so is an item that is neither a string nor a path (``os.PathLike``, given as its
    text): a command line passes text as it was typed, and a number turned into text here
    would be spelled as Python spells it (``1e6`` as ``1000000.0``, ``True`` as ``True``),
    not as the user meant it.
    """
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{name}={shown(value)}: expected a list of {what}")
    items = []
    for item in value:
        text = os.fspath(item) if isinstance(item, os.PathLike) else item
        if not isinstance(text, str):
            raise ConfigError(
                f"{name}: item {shown(item)} is not a string (arguments are text, as on a "
                "command line)"
            )
        items.append(text)
    return items


def check_frame(value: Any, name: str = "df") -> Any:
    """``value`` if it is a :class:`pandas.DataFrame`, else a one-line :class:`ConfigError`
    naming ``name`` and the type given: the results tables that the sweep store and the
    figures take.  pandas is looked up, not imported (a frame exists only once it is
    loaded), so that the modules checking parameters start without it."""
    pd_ = sys.modules.get("pandas")
    if pd_ is None or not isinstance(value, pd_.DataFrame):
        got = "None" if value is None else type(value).__name__
        raise ConfigError(
            f"{name}: expected a pandas DataFrame of results "
            f"(simsched.experiments.load_results), got {got}"
        )
    return value


def column_hint(name: Any, columns: Sequence[Any], shown: int) -> str:
    """What to tell of a column a results table lacks, after ``no column NAME``.

    A sweep's parameter columns come first: the first names alone hid the metric meant
    (``makespan_cycles`` for ``makespan``) and read as the whole list.

    Parameters
    ----------
    name
        The column asked for.
    columns
        The table's columns.
    shown
        How many columns to list when none contains ``name``.

    Returns
    -------
    str
        ``did you mean a, b?`` (up to five columns containing ``name``, in any case; an
        empty name is in none), else ``have: c, d, ... (N columns)``.
    """
    names = [str(c) for c in columns]
    wanted = str(name).lower()
    near = [c for c in names if wanted.strip() and wanted in c.lower()][:5]
    if near:
        return f"did you mean {', '.join(near)}?"
    more = f", ... ({len(names)} columns)" if len(names) > shown else ""
    return f"have: {', '.join(names[:shown])}{more}"


def python_scalars(value: Any) -> Any:
    """``value`` with every numpy scalar in it (in nested dicts, lists and tuples) as the
    Python ``bool``, ``int``, ``float`` or ``str`` it holds, for the schemas that take
    strict integers: a parameter computed with numpy (``np.int64(4)``) is accepted as the
    same number written in Python."""
    if numpy_instance(value, "generic"):
        return value.item()
    if isinstance(value, Mapping):
        return {k: python_scalars(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(python_scalars(v) for v in value)
    return value


_POW = re.compile(r"^\s*(\d+)\s*(?:\^|\*\*)\s*(\d+)\s*$")
_SHIFT = re.compile(r"^\s*(\d+)\s*<<\s*(\d+)\s*$")
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


#: Largest exponent ``parse_int`` evaluates (``2^64``; every parameter's limit is below).
MAX_EXPONENT = 64


class HugeExponent(ValueError):
    """An integer written in :func:`parse_int`'s power or shift form with an exponent above
    :data:`MAX_EXPONENT`: the form is right, the number far beyond any limit."""


def parse_int(text: str) -> int:
    """An integer written as ``1048576``, ``1_048_576``, ``0x100000``, ``2^20``, ``2**20``
    or ``1<<20``; ``ValueError`` otherwise."""
    t = text.strip().replace("_", "")
    m = _POW.match(t) or _SHIFT.match(t)
    if m:
        if int(m.group(2)) > MAX_EXPONENT:
            # not computed: 1<<99999 is a number of 30,000 digits
            raise HugeExponent(f"{text!r}: an exponent above {MAX_EXPONENT}")
        base, exp = int(m.group(1)), int(m.group(2))
        return base**exp if m.re is _POW else base << exp
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
    # numpy's scalars as the Python values they hold: np.True_ was refused as a bool, and
    # taken as 1.0 by a float parameter that refuses True
    value = python_scalars(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if (isinstance(value, int) or numpy_instance(value, "integer")) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
            return value.strip().lower() in TRUE
        raise ConfigError(f"{where}: expected true or false, got {shown(value)}")
    if kind is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected an integer, got {shown(value)}")
        if isinstance(value, int) or numpy_instance(value, "integer"):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return parse_int(value)
            except HugeExponent as exc:
                raise ConfigError(f"{where}: {exc}, far beyond any limit") from None
            except ValueError:
                pass
        raise ConfigError(
            f"{where}: expected an integer (e.g. 1048576, 2^20, 1<<20), got {shown(value)}"
        )
    if kind is float:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {shown(value)}")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number, got {shown(value)}") from None
        why = float_out_of_range(value, x) if isinstance(value, str) else None
        if why is not None:  # YAML reads 1e-999 (no dot) as text, which reads as 0.0 here
            raise ConfigError(f"{where}: {shown(value)} is {why}")
        if not math.isfinite(x):
            raise ConfigError(f"{where}: expected a finite number, got {shown(value)}")
        return x
    if kind is str:
        return value
    raise TypeError(f"unsupported parameter kind {kind}")  # a bug in a parameter table


def check_label(value: str, what: str) -> str:
    """``value`` when it is a non-empty line of text, for a name that heads one-line
    messages, tables and figures (a machine's, a job's); else :class:`ValueError` (a
    pydantic validator's error) saying what ``what`` needs.

    A newline broke a machine file that ``machine show`` wrote, and a job's name with a
    NUL or a newline reached tables, titles and the results' CSV.
    """
    if not value.strip():
        raise ValueError(f"empty; {what} needs a name")
    if not is_one_line(value):
        raise ValueError(f"{value!r}: a name is one line of text (no control characters)")
    if not is_utf8(value):
        raise ValueError(
            f"{value!r}: a name is UTF-8 text (a byte that is not UTF-8 on the command line?)"
        )
    return value


def is_one_line(text: str) -> bool:
    """Whether ``text`` has no control characters (newline, NUL, DEL ...)."""
    return not any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: not when it holds a lone surrogate, which
    is what Python makes of a byte that is not UTF-8 in a command-line argument or a file
    name (``\\xff`` becomes ``'\\udcff'``).  Such text reached the results' Parquet table
    and failed there with a ``UnicodeEncodeError`` and its traceback."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def name_text(name: str) -> str:
    """A file name as UTF-8 text for a label or a trace's program name: the bytes that are
    not UTF-8 written as ``\\xNN`` (a program ``./fib\\xffprog`` is named ``fib\\xffprog``),
    any other name unchanged (:func:`is_utf8`); the rewriting of an error's line
    (:func:`simsched.errors.utf8_text`)."""
    return utf8_text(name)


def is_power_of_two(n: int) -> bool:
    """Whether the integer ``n`` is a positive power of two (cache lines, sets, pages,
    chunk sizes, hash partitions all must be)."""
    return n > 0 and n & (n - 1) == 0


def _bound(n: int) -> str:
    """``n`` for a message, with its power of two when it is a large one (``2^40``) or
    one less than one (``2^63 - 1``)."""
    if n >= 2**20 and is_power_of_two(n):
        return f"{n} (2^{n.bit_length() - 1})"
    if n >= 2**20 and is_power_of_two(n + 1):
        return f"{n} (2^{n.bit_length()} - 1)"
    return str(n)


def check_int(name: str, value: Any, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as an int in ``[minimum, maximum]``, or a one-line :class:`ConfigError`
    naming ``name``: the one integer check of the Python API (seeds, windows, sample
    counts), the trace and profile options, the scheduler modules (boundary, packing,
    desire) and the engine's allotment functions.

    Parameters
    ----------
    name
        What the value is, for the error message.
    value
        An integer (Python or numpy; not a bool, not a float).
    minimum
        Smallest value accepted.
    maximum
        Largest value accepted (None: no bound).

    Returns
    -------
    int
    """
    if isinstance(value, bool):
        raise ConfigError(f"{name}={shown(value)}: expected an integer")
    try:
        v = operator.index(value)
    except TypeError:
        raise ConfigError(f"{name}={shown(python_scalars(value))}: expected an integer") from None
    if maximum is not None and not minimum <= v <= maximum:
        raise ConfigError(f"{name}={v}: must be between {minimum} and {_bound(maximum)}")
    if v < minimum:
        raise ConfigError(f"{name}={v}: must be at least {minimum}")
    return int(v)


def check_ints(name: str, values: Any, minimum: int = 0) -> np.ndarray:
    """``values`` as an int64 array of whole numbers ``>= minimum``, or a :class:`ConfigError`.

    Floats are accepted when every one is a whole number (counts read from JSON or
    computed in floating point).

    Parameters
    ----------
    name
        What the values are, for the error message.
    values
        Array-like of numbers.
    minimum
        Smallest value accepted.

    Returns
    -------
    numpy.ndarray
        int64, same shape.
    """
    import numpy as np

    x = np.asarray(values)
    if x.size and x.dtype.kind not in "iu":
        if x.dtype.kind != "f" or not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
            raise ConfigError(f"{name} must be whole numbers")
    x = x.astype(np.int64)
    if np.any(x < minimum):
        raise ConfigError(f"{name} must be at least {minimum}")
    return x


# -- declared parameters of policies -------------------------------------------------------
def _phrase(words: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _param_bound(b: float) -> str:
    """A declared bound for a message: an integer exactly (``:g`` rounds 2^63 - 1)."""
    return _bound(b) if isinstance(b, int) else f"{b:g}"


@dataclass(frozen=True)
class Param:
    """One declared parameter of a scheduler or processor controller.

    The type is the default's (bool, int, float or str); values are read by :func:`coerce`
    and then checked against the bounds or choices declared here.

    Attributes
    ----------
    default
        Value when the parameter is not given.
    doc
        One line for ``simsched schedulers --params`` and docs/schedulers.md (cite the
        paper's equation where the parameter comes from one).
    choices
        For a string parameter: the values accepted (compared lower-case).
    synonyms
        Further spellings of a choice (``{"yes": ("true", "1", "on")}``).
    gt, ge, le
        Bounds of a number (``> gt``, ``>= ge``, ``<= le``).
    parse
        For a value of more than one kind (CAB's ``bl``: ``auto`` or a level):
        ``parse(value, where)`` returns it resolved or raises :class:`ConfigError`;
        ``kind_name`` then names its type in the documentation.
    kind_name
        Type shown in the documentation (default: the default's type, or the choices).
    """

    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    parse: Callable[[Any, str], Any] | None = None
    kind_name: str = ""

    def __post_init__(self) -> None:
        # A bound of another type failed at the first value checked, as a TypeError
        # inside simsched; the plug-in's declaration is the place to say so.
        for bound in ("gt", "ge", "le"):
            b = getattr(self, bound)
            if b is not None and (isinstance(b, bool) or not isinstance(b, int | float)):
                raise ConfigError(f"Param({self.default!r}, ...): {bound}={b!r} is not a number")

    @property
    def kind(self) -> type:
        """The declared type: that of the default (``str`` when it is None)."""
        d = self.default
        return type(d) if isinstance(d, bool | int | float) else str

    def type_text(self) -> str:
        """The type as the documentation shows it."""
        if self.kind_name:
            return self.kind_name
        if self.choices:
            return " | ".join(self.choices)
        bounds = [
            f"> {self.gt:g}" if self.gt is not None else "",
            f">= {self.ge:g}" if self.ge is not None else "",
            f"<= {self.le:g}" if self.le is not None else "",
        ]
        rng = ", ".join(b for b in bounds if b)
        return self.kind.__name__ + (f" ({rng})" if rng else "")

    def check(self, value: Any, where: str, name: str) -> Any:
        """``value`` coerced and checked; a :class:`ConfigError` names ``where`` and ``name``."""
        if self.parse is not None:
            return self.parse(value, f"{where}: {name}")
        v = coerce(value, self.kind, f"{where}: {name}")
        if self.choices:
            s = str(v).strip().lower()
            for choice in self.choices:
                if s == choice or s in self.synonyms.get(choice, ()):
                    return choice
            if value is None:  # `-p cf_start=none` quoted None, which nobody typed
                raise ConfigError(
                    f"{where}: {name} has no value (null, none or nothing given), not "
                    f"{_phrase(self.choices)}"
                )
            raise ConfigError(f"{where}: {name}={shown(value)} is not {_phrase(self.choices)}")
        if self.gt is not None and not v > self.gt:
            raise ConfigError(f"{where}: {name}={v!r} must be > {_param_bound(self.gt)}")
        if self.ge is not None and not v >= self.ge:
            raise ConfigError(f"{where}: {name}={v!r} must be >= {_param_bound(self.ge)}")
        if self.le is not None and not v <= self.le:
            raise ConfigError(f"{where}: {name}={v!r} must be <= {_param_bound(self.le)}")
        return v


class ParamSchema:
    """The parameters a policy accepts, declared once: names, types, defaults, bounds, docs.

    Parameters
    ----------
    **params
        One :class:`Param` per parameter name, in the order the documentation lists them.
    """

    def __init__(self, **params: Param) -> None:
        for name, p in params.items():
            if not isinstance(p, Param):
                raise ConfigError(
                    f"ParamSchema: {name}={p!r} is not a Param (declare {name}=Param(default, "
                    "doc, ...))"
                )
        self.params: dict[str, Param] = dict(params)

    def __iter__(self) -> Iterator[str]:
        return iter(self.params)

    def __contains__(self, name: object) -> bool:
        return name in self.params

    def __len__(self) -> int:
        return len(self.params)

    def __getitem__(self, name: str) -> Param:
        return self.params[name]

    def extend(self, **params: Param) -> ParamSchema:
        """This schema with parameters added or redeclared (a subclass's schema)."""
        return ParamSchema(**{**self.params, **params})

    @classmethod
    def from_defaults(cls, defaults: Mapping[str, Any]) -> ParamSchema:
        """A schema from a plain ``{name: default}`` table (plug-ins written before schemas)."""
        return cls(**{k: Param(v, "") for k, v in defaults.items()})

    def defaults(self) -> dict[str, Any]:
        """``{name: default}``."""
        return {k: p.default for k, p in self.params.items()}

    def resolve(self, where: str, values: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults updated with ``values``, each coerced and checked.

        Parameters
        ----------
        where
            The owner, for messages (``"scheduler 'ws'"``).
        values
            Parameters as given (Python values, YAML scalars or strings).

        Raises
        ------
        ConfigError
            An unknown name (the known ones are listed) or a value that does not fit.
        """
        values = check_mapping(values, f"{where}: parameters")
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            known = ", ".join(sorted(self.params)) or "none"
            raise ConfigError(
                f"{where}: unknown parameter(s) {', '.join(unknown)} (known: {known})"
            )
        out = self.defaults()
        for k, v in values.items():
            out[k] = self.params[k].check(v, where, k)
        return out

    def rows(self) -> list[tuple[str, str, str, str]]:
        """``(name, type, default, doc)`` per parameter, for tables."""
        return [(k, p.type_text(), repr(p.default), p.doc) for k, p in self.params.items()]

    def markdown(self) -> str:
        """The parameters as a Markdown table (docs/schedulers.md embeds these)."""
        if not self.params:
            return "No parameters.\n"
        lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
        for name, p in self.params.items():
            kind = p.type_text().replace("|", "\\|")  # a | inside a cell ends the cell
            d = p.default
            default = d if isinstance(d, str) else repr(d)
            lines.append(f"| `{name}` | {kind} | `{default}` | {p.doc} |")
        return "\n".join(lines) + "\n"


def settle_plugin_class(cls: Any, kind: str) -> None:
    """Settle what a scheduler or controller subclass declares, as it is made (the base
    classes' ``__init_subclass__``): its parameters, and its aliases.

    A subclass under a new ``name`` is another policy: its parent's aliases (WS's
    ``cilk``) are taken by the parent, so inheriting them made ``class MyWS(WorkStealing):
    name = "myws"`` fail to register; it gets none unless it declares its own.
    """
    if "name" in cls.__dict__ and "aliases" not in cls.__dict__:
        cls.aliases = ()
    if "params_schema" in cls.__dict__ or "param_defaults" in cls.__dict__:
        cls.params_schema = declared_schema(cls, kind)
        cls.param_defaults = cls.params_schema.defaults()


def declared_schema(cls: type, kind: str) -> ParamSchema:
    """The :class:`ParamSchema` a scheduler or controller class declares: its
    ``params_schema``, or one made from an older plug-in's ``param_defaults`` table.

    Raises
    ------
    ConfigError
        The declaration is of another type, naming the class (it failed inside simsched
        with "'dict' object has no attribute 'defaults'").
    """
    where = f"{kind} class {cls.__name__}"
    if "params_schema" in cls.__dict__:
        schema = cls.__dict__["params_schema"]
        if not isinstance(schema, ParamSchema):
            raise ConfigError(
                f"{where}: params_schema must be a simsched.params.ParamSchema, not "
                f"{type(schema).__name__}"
            )
        return schema
    table = check_mapping(cls.__dict__["param_defaults"], f"{where}: param_defaults")
    # A name the parent class declares keeps the parent's kind, bounds and choices (a WS
    # subclass's spawn_policy took any string, and a misspelt one ran parent-first).
    parent = getattr(super(cls, cls), "params_schema", None)
    inherited = parent.params if isinstance(parent, ParamSchema) else {}
    params = {}
    for k, v in table.items():
        p = inherited.get(k)
        params[k] = Param(v, "") if p is None else replace(p, default=p.check(v, where, k))
    return ParamSchema(**params)
