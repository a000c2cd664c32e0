"""User errors: the one-line messages and how they name what a caller gave."""

from __future__ import annotations

import pytest

from simsched.errors import command_line, one_line, shown, spelled, utf8_text


def test_a_message_names_an_argument_as_its_caller_wrote_it():
    """A function the Python API and the command line both call named the command line's
    options (--where, --kind bar) to a Python caller, who cannot give them."""
    assert spelled("kind='bar'", "--kind bar") == "kind='bar'"
    with command_line():
        assert spelled("kind='bar'", "--kind bar") == "--kind bar"
        with command_line(False):  # a sweep point run in the command's own process
            assert spelled("kind='bar'", "--kind bar") == "kind='bar'"
        assert spelled("kind='bar'", "--kind bar") == "--kind bar"
    assert spelled("kind='bar'", "--kind bar") == "kind='bar'"
    with pytest.raises(KeyError), command_line():
        raise KeyError("x")
    assert spelled("a", "b") == "a"  # left as it was after an error too


def test_the_command_line_spells_its_options_only_while_a_command_runs(capsys):
    from simsched.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["results", "show", "/nonexistent/sweep", "--where", "x=1"])
    assert exc.value.code == 2 and "Traceback" not in capsys.readouterr().err
    assert spelled("a", "b") == "a"


def test_shown_keeps_a_quoted_value_on_one_short_line():
    assert shown("a\nb") == "'a\\nb'"
    assert len(shown("x" * 5000)) < 80


def test_one_line_writes_out_control_characters_and_bytes_that_are_not_utf8():
    assert one_line("a\nb.sst: no such\ttrace\x7f") == "a\\nb.sst: no such\ttrace\\x7f"
    assert one_line("n\udcff.yaml: no such file") == "n\\xff.yaml: no such file"
    assert one_line("é ok") == "é ok"
    # a surrogate that no byte of a file name made (a JSON "\ud800") does not raise
    assert utf8_text("a\ud800\udcff") == "a\\ud800\\udcff"


def test_an_unexpected_error_is_described_with_its_notes():
    """A plug-in's exception reached a failure record and a sweep row as its message
    alone: the engine's note naming the scheduler was lost."""
    from simsched.errors import described
    from simsched.experiments.point import _error_record

    exc = RuntimeError("boom")
    assert described(exc) == "RuntimeError: boom"
    exc.add_note("raised by scheduler 'mine' at cycle 370")
    assert described(exc) == "RuntimeError: boom (raised by scheduler 'mine' at cycle 370)"
    assert _error_record(exc)["error"] == described(exc)
