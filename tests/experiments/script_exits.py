"""How the figure-script tests check a command-line ending: one line on stderr, a status."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def one_line_exit(capsys, fn: Callable[[], object], status: int = 2) -> str:
    """Run ``fn``; assert it exits with ``status`` and one line on stderr; return that line."""
    with pytest.raises(SystemExit) as info:
        fn()
    assert info.value.code == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err
