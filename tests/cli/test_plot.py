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
    assert one_line(err) == (
        "simsched: error: an empty path, expected a run folder (`simsched run --out`) or "
        "its result.json"
    )
    assert not (tmp_path / "f.png").exists()
