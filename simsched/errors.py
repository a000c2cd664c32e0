"""Exceptions simsched raises for problems a user can fix.

Every error a user can cause by what they pass in (a file, a config, an option) derives
from :class:`SimschedError`; the CLI prints its message on one line and exits with status 2.
Anything else is a bug in simsched and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import reprlib
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from types import FrameType, ModuleType
from typing import Any


class SimschedError(Exception):
    """Base class of user-facing errors: the message names the input and what is wrong."""


class TraceFormatError(SimschedError):
    """A trace or raw capture stream is malformed, truncated, corrupt or of another version."""


class TraceBuildError(SimschedError):
    """A program's markers do not form a well-formed fork/join DAG."""


class IterationMarkError(TraceBuildError, ValueError):
    """An iteration mark breaks the rule of docs/trace-format.md (made in main, with
    increasing numbers in ``0..2**63-1``)."""


class ConfigError(SimschedError):
    """A machine, run or sweep configuration is invalid."""


class CaptureError(SimschedError):
    """A capture backend is missing or the captured program failed."""


class DeadlockError(SimschedError):
    """A replay reached a state from which no job can progress (e.g. a job that holds no
    core and never will); the message names the cycle, the jobs left and their cores."""


class PluginError(SimschedError, RuntimeError):
    """A scheduler or controller from outside simsched broke the engine's contract: a
    decision, desire, allotment, counter or record field the engine cannot take.  The
    message names the plug-in, its job, the core and the cycle; the plug-in's author can
    fix it, so the CLI says it in one line.  The same fault in a built-in policy is a bug
    in simsched and stays a plain ``RuntimeError`` with its traceback
    (:func:`contract_error`)."""


def contract_error(policy: object, message: str) -> RuntimeError:
    """The error of a scheduler or controller ``policy`` (or of a generator module) that
    broke simsched's contract.

    A :class:`PluginError` (one line and exit status 2 from the CLI) for a plug-in from
    outside simsched, whose author can fix it; a plain ``RuntimeError``, its traceback
    kept, for a built-in policy, where the fault is simsched's.
    """
    home = policy.__name__ if isinstance(policy, ModuleType) else type(policy).__module__
    builtin = home.startswith("simsched.")
    return RuntimeError(message) if builtin else PluginError(message)


def innermost(exc: BaseException, pick: Callable[[FrameType], Any]) -> Any:
    """What ``pick`` finds in the innermost frame of ``exc``'s traceback where it finds
    anything, else the same in its cause's (a copy raised from the original, as SimPy
    raises a process's exception), and so on; None when it finds nothing.

    With :func:`note_raised_by`, how an exception from a plug-in's own code is made to
    name the plug-in (schedulers and controllers in a replay, workload generators).
    """
    chain: BaseException | None = exc
    while chain is not None:
        found = None
        tb = chain.__traceback__
        while tb is not None:
            hit = pick(tb.tb_frame)
            if hit is not None:
                found = hit
            tb = tb.tb_next
        if found is not None:
            return found
        chain = chain.__cause__
    return None


def note_raised_by(exc: BaseException, kind: str, name: str, origin: str, more: str = "") -> None:
    """Add to ``exc`` the note ``raised by KIND 'NAME' (ORIGIN)MORE``: whose code raised it
    (``origin``, its module or class), which a traceback into simsched did not say."""
    exc.add_note(f"raised by {kind} {name!r} ({origin}){more}")


class OutputError(SimschedError):
    """An output file cannot be written (full disk, read-only file system, permission...).

    ``errno`` is the operating system's error number when one caused it (``ENOSPC`` for a
    full disk), else ``None``: a sweep leaves a point pending rather than failed when its
    disk was full.
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno

    def __reduce__(self) -> tuple:  # keep errno across processes (sweep workers)
        return (type(self), (str(self), self.errno))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process was (``simsched`` turns the signal into this) so
    that it unwinds as after Ctrl-C: temporaries removed, a failed run's record written.
    A ``KeyboardInterrupt``, so every handler of Ctrl-C also handles it."""


def described(exc: BaseException) -> str:
    """``"Type: message"`` of an unexpected error, with the notes added to it on its way
    (``exc.add_note``; the engine names the scheduler a plug-in's exception came from):
    a failure record and a sweep row keep the message, not the traceback the notes print
    under, and without them named no plug-in."""
    notes = [str(n) for n in getattr(exc, "__notes__", ()) or ()]
    return f"{type(exc).__name__}: {exc}" + "".join(f" ({n})" for n in notes)


def interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM (:class:`Terminated`) that ``exc`` stands for, else None.

    ``exc`` itself when it is one; or the one that a compiled Numba function's call back
    into Python raised (its constants are unpickled by such a call), which reaches the
    function's caller as a ``SystemError`` ("returned a result with an exception set")
    caused by it: without this, an interrupt at that moment was reported as an internal
    error with a traceback.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return cur
        if not isinstance(cur, SystemError):
            return None
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


#: Whether the ``simsched`` command is running a command (:func:`command_line`).
_COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "simsched_command_line", default=False
)


@contextlib.contextmanager
def command_line(on: bool = True) -> Iterator[None]:
    """Inside it, :func:`spelled` gives the command line's words (``on``) or the Python
    API's (not ``on``: a sweep point run in the command's own process names the keys of
    its spec, as in a worker process, which starts with the Python API's)."""
    token = _COMMAND_LINE.set(on)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def spelled(python: str, command: str) -> str:
    """How a message names what a user gave: ``python``, the Python API's keyword
    (``iterations='auto'``), or inside :func:`command_line` ``command``, the option typed
    (``--iterations auto``).

    A function that both the Python API and the command line call names its input as
    the caller wrote it: a Python caller was told of ``--where`` or ``--kind bar``, options
    it has no way to give.
    """
    return command if _COMMAND_LINE.get() else python


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = _SHOWN.maxdict = 6
_SHOWN.maxlevel = 3


def shown(value: Any) -> str:
    """``repr(value)`` as an error message quotes a value the user gave: a long text, list
    or mapping shortened with ``...`` (a 5000-character value quoted in full made the
    one-line message thousands of characters long), on one line (a table's repr has
    several)."""
    return _SHOWN.repr(value).replace("\n", " ")


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate, which is what Python makes of a
    byte that is not UTF-8 in a file name or an argument (``\\xff`` read as ``'\\udcff'``),
    written as ``\\xNN`` (all of them as ``\\udcff`` when the text also holds one that
    no such byte made, from a JSON ``\\ud800``); any other text unchanged."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(message: str) -> str:
    """``message`` as one line of UTF-8 text: each control character but a tab written as
    Python writes it in a string (``\\n``, ``\\x01``) and a lone surrogate as
    :func:`utf8_text` writes it.  A message names what the user gave as it was given, and
    a file name or a value with a newline split one error into lines."""
    text = utf8_text(message)
    if text.isprintable():
        return text
    return "".join(
        repr(c)[1:-1] if c != "\t" and unicodedata.category(c) == "Cc" else c for c in text
    )


#: The branches of a parameter's value (``str | int | float | bool``) as pydantic names
#: them at the end of an error's location.
SCALAR_TAGS = frozenset({"str", "int", "float", "bool"})


def scalar_type_error(loc: Any, given: Any) -> dict[str, Any]:
    """The one error that stands for pydantic's four of a parameter's value at ``loc`` of
    none of :data:`SCALAR_TAGS`' types (a list, a mapping, null): pydantic names each
    branch, types the user never wrote."""
    return {
        "loc": tuple(loc),
        "type": "scalar_type",
        "msg": f"expected a number, text or true/false, got {shown(given)}",
    }


def field_message(err: Mapping[str, Any]) -> str:
    """What one of pydantic's errors (an item of ``ValidationError.errors()``) says to a
    user: "unknown key", "required key missing", or the check's own words without
    pydantic's "Value error, " in front of them."""
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        return "required key missing"
    if err["type"] == "model_type":
        # pydantic names its own class ("a valid dictionary or instance of MachineSpec")
        return f"expected a mapping of keys and values, got {shown(err.get('input'))}"
    if err["type"] == "string_too_short" and (err.get("ctx") or {}).get("min_length") == 1:
        return "must not be empty"
    if err["type"] in ("list_type", "tuple_type"):
        return f"expected a list, got {shown(err.get('input'))}"
    return str(err["msg"]).removeprefix("Value error, ")


def float_out_of_range(text: str, value: float) -> str | None:
    """Why the number written ``text`` does not read as ``value`` says, or None.

    ``1e999`` reads as infinity and ``1e-999`` as 0: a field refusing the value then
    echoes ``inf`` or ``0.0``, which nobody wrote, and a field accepting it runs with a
    number other than the one given.  Infinity written as such (``inf``, ``.inf``) is the
    field's to take or refuse.

    Parameters
    ----------
    text
        The number as written (command line, YAML scalar).
    value
        What it reads as.

    Returns
    -------
    str or None
        The clause to put after the text in an error, or None when ``value`` is ``text``.
    """
    low = text.strip().lower()
    if math.isinf(value) and "inf" not in low:
        return "out of a number's range (it would read as infinity)"
    if value == 0.0 and any(unicodedata.digit(c, 0) for c in low.split("e")[0]):
        return "too small for a number (it would read as 0)"
    return None
