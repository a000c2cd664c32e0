"""The figure scripts' shared reading of sweep folders: a missing one exits 2 in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from simsched.experiments.scripts import load_figure_rows, usage_error


def one_line_exit(capsys, fn) -> str:
    """Run ``fn``; assert it exits 2 with one line on stderr, and return that line."""
    with pytest.raises(SystemExit) as info:
        fn()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_usage_error_prefixes_the_script(capsys):
    err = one_line_exit(capsys, lambda: usage_error("bad thing", prog="x.py"))
    assert err == "x.py: bad thing\n"


def test_missing_folder_names_it_and_the_spec_that_fills_it(tmp_path, capsys):
    study = tmp_path / "mystudy"
    study.mkdir()
    (study / "published.yaml").write_text("name: x\n")
    missing = study / "results" / "published"
    err = one_line_exit(capsys, lambda: load_figure_rows([missing], study))
    assert str(missing) in err
    assert "simsched sweep run experiments/mystudy/published.yaml" in err
    # no spec of that name: the error still names the folder, without a hint
    err = one_line_exit(capsys, lambda: load_figure_rows(study / "results" / "other", study))
    assert "results/other" in err and "sweep run" not in err


def test_rows_of_several_folders_are_concatenated_ok_only(tmp_path):
    for name, status in (("a", "ok"), ("b", "error")):
        pd.DataFrame({"status": ["ok", status], "x": [1, 2]}).to_csv(tmp_path / f"{name}.csv")
    df = load_figure_rows([tmp_path / "a.csv", tmp_path / "b.csv"])
    assert list(df["status"]) == ["ok"] * 3 and len(df) == 3
