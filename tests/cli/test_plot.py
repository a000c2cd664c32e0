"""``simsched plot timeline / allotment / iterations``: what is wrong with a run's path."""

from __future__ import annotations

import pytest

from tests.cli.test_errors import one_line


@pytest.mark.parametrize(
    "args",
    [
        ["plot", "timeline", ""],
        ["plot", "allotment", ""],
        ["plot", "iterations", ""],
        ["plot", "iterations", "elsewhere", ""],
    ],
)
def test_an_empty_path_is_named_as_such(cli, tmp_path, monkeypatch, args):
    """typer made "" the current folder: "result.json: no such file", or ".: no
    result.json there", of a path nobody gave."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(*args, "-o", tmp_path / "f.png")
    assert code == 2 and out == ""
    # refused before the command runs, as every empty argument is (its own check,
    # simsched.plotting.runfolder.run_path, answers a Python caller)
    said = f"simsched: error: plot {args[1]}: an empty argument (an unset shell variable?)"
    assert one_line(err) == said
    assert not (tmp_path / "f.png").exists()
