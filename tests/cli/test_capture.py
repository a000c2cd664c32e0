"""``simsched capture``'s own argument checks (the captures themselves: tests/capture)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ["--iteration", "none", "--", "./prog"],  # a misspelt option and its value
        ["--verbos", "--", "./prog", "3"],
        ["--", "--iterations", "none", "./prog"],  # an option after --
    ],
)
def test_an_unknown_option_is_not_taken_for_the_program(cli, tmp_path, args):
    code, _, err = cli("capture", "-o", tmp_path / "x.sst", *args)
    assert code == 2 and "Traceback" not in err
    assert f"no such option: {args[1] if args[0] == '--' else args[0]}" in err
    assert "no such program" not in err
    assert not (tmp_path / "x.sst").exists()


def test_no_empty_line_away_from_a_terminal(cli, tmp_path):
    # the progress bar, never drawn into a pipe, still wrote an empty line there
    code, _, err = cli("capture", "-o", tmp_path / "x.sst", "--", "/bin/true")
    assert code == 2 and err.startswith("simsched: error: /bin/true: not built for the gcc backend")
