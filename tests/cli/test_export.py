"""``simsched export timeline``: what is wrong with a run's path."""

from __future__ import annotations

from tests.cli.test_errors import one_line


def test_an_empty_path_is_named_as_such(cli, tmp_path, monkeypatch):
    """typer made "" the current folder: ".: no result.json there"."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("export", "timeline", "", "-o", tmp_path / "t.json")
    assert code == 2 and out == ""
    # refused before the command runs, as every empty argument is (its own check,
    # simsched.plotting.runfolder.run_path, answers a Python caller)
    assert one_line(err) == (
        "simsched: error: export timeline: an empty argument (an unset shell variable?)"
    )
    assert not (tmp_path / "t.json").exists()
