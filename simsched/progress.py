"""Progress of a long step on stderr: a live bar at a terminal, plain lines elsewhere.

A bar redrawn in place means nothing in a log file or a pipe, so when stderr is not a
terminal the same progress is written as one plain line every ``interval`` seconds
(``simulating ws on itrs-scaling-16: 42.0 %, 43 s left (31 s)``: the time left is the rate
so far applied to what remains) and a last line when the step ends; a ``detail`` callback
adds to each line where the step is in its own words (a replay's cycle and strands done,
which move when nothing countable is done, and show a run that no longer moves).
Whether to report at all is the caller's choice (the CLI's ``--progress`` / ``--no-progress``,
by default only at a terminal); how is decided here.  :func:`plural` words the counts of
such lines and of the commands' summaries.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

#: Seconds between two plain progress lines.
LINE_INTERVAL_S = 10.0


def duration(seconds: float) -> str:
    """``1 h 02 min``, ``12 min 05 s`` or ``7 s``."""
    s = max(0, int(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def plural(count: int, noun: str, nouns: str | None = None, *, thousands: bool = False) -> str:
    """A count with its noun in agreement, for messages: ``1 point``, ``2 points``.

    Parameters
    ----------
    count
        How many.
    noun
        The singular form.
    nouns
        The plural form, when it is not ``noun + "s"`` (``"entries"``).
    thousands
        Group the count's digits by thousands (``1,234 times``).

    Returns
    -------
    str
        ``"{count} {noun}"`` for a count of 1, else ``"{count} {nouns}"``.
    """
    shown = f"{count:,}" if thousands else str(count)
    return f"{shown} {noun if count == 1 else nouns or noun + 's'}"


class Progress:
    """Report the progress of one step; use as a context manager and call :meth:`update`.

    Parameters
    ----------
    label
        What is in progress (``"generating mergesort"``).
    unit
        What is counted when the total is unknown (``"references"``).
    stream
        Where to report (default ``sys.stderr``).
    interval
        Seconds between plain lines (default :data:`LINE_INTERVAL_S`).
    detail
        Called for each line (and each redraw of the bar): more of where the step is, in
        words (a replay's cycle and strands done, which move when the count of done
        units does not).
    """

    def __init__(
        self,
        label: str,
        *,
        unit: str = "",
        stream: IO[str] | None = None,
        interval: float = LINE_INTERVAL_S,
        detail: Callable[[], str] | None = None,
    ) -> None:
        self.label = label
        self.detail = detail
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.done = 0
        self.total: int | None = None
        self._bar: Any = None
        self._task: Any = None
        self._t0 = 0.0
        self._last = 0.0

    def __enter__(self) -> Progress:
        self._t0 = self._last = time.monotonic()
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[text]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),  # shown once the total is known
                console=Console(file=self.stream),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None, text="")
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, *exc)
            return
        if exc_type is None:
            self._line(f"done, {self._amount()}{self._detail()}")

    def _amount(self) -> str:
        if self.total:
            return f"{100 * self.done / self.total:.1f} %"
        return f"{self.done:,} {self.unit}".rstrip()

    def _detail(self) -> str:
        """``; `` and what :attr:`detail` says, or nothing."""
        return "" if self.detail is None else f"; {self.detail()}"

    def _left(self, elapsed: float) -> str:
        """``, 43 s left`` once a second has passed with a total and part of it done."""
        if not self.total or not 0 < self.done < self.total or elapsed < 1:
            return ""
        return f", {duration(elapsed * (self.total - self.done) / self.done)} left"

    def _line(self, text: str) -> None:
        elapsed = time.monotonic() - self._t0
        print(f"{self.label}: {text} ({elapsed:.0f} s)", file=self.stream, flush=True)

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` units finished (of ``total``, when known: ``None`` or 0 is unknown)."""
        self.done = int(done)
        if total:
            self.total = int(total)
        if self._bar is not None:
            text = self._amount() + self._detail()
            self._bar.update(self._task, completed=self.done, total=self.total, text=text)
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._line(self._amount() + self._left(now - self._t0) + self._detail())

    def __call__(self, done: int, total: int | None = None) -> None:
        """Same as :meth:`update`: the engine and the readers take a plain callback."""
        self.update(done, total)
