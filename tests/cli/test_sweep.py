"""``simsched sweep``'s help texts say what its options do."""

from __future__ import annotations

import pytest

from simsched.cli import main


def _help(capsys, *words: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*words, "--help"])
    assert info.value.code in (0, None)
    # rich wraps the lines in a box: the words, without the box
    return " ".join(w for w in capsys.readouterr().out.split() if w != "│")


def test_sweep_help_says_what_progress_and_small_do(capsys):
    """``sweep run --progress`` said "draw a progress bar", though logs and pipes get plain
    lines; ``sweep status --small`` said "run the spec's small variant" for a command that
    runs nothing."""
    run = _help(capsys, "sweep", "run")
    assert "draw a progress bar" not in run
    assert "a bar at a terminal, else a plain line when points have finished" in run
    assert "run the spec's small variant" in run
    status = _help(capsys, "sweep", "status")
    assert "run the spec's small variant" not in status
    assert "check and count the points of the spec's small variant" in status
