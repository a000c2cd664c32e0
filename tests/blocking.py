"""Calling something that may block for ever (opening a named pipe), without the test
hanging when it does."""

from __future__ import annotations

import threading
from collections.abc import Callable


def raised_within(call: Callable[[], object], what: str, seconds: float = 10.0) -> list:
    """The exceptions ``call()`` raised, run in a daemon thread; fails the test, naming
    ``what``, when the call has not returned after ``seconds`` (a regression to blocking
    then fails instead of hanging the suite; the thread is left to the process's end)."""
    out: list[BaseException] = []

    def attempt() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out.append(exc)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{what} blocked"
    return out
