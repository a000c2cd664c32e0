"""Progress reports: plain periodic lines when stderr is not a terminal (issue 25, item 4)."""

from __future__ import annotations

import io
import types

import pytest

from simsched.cli import main
from simsched.progress import Progress
from simsched.workloads import generate


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_lines_on_a_non_terminal_with_percentages_or_counts():
    out = io.StringIO()
    with Progress("scanning", unit="references", stream=out, interval=0) as p:
        p(5, 20)
        p(20, 20)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("scanning: 25.0 % (")
    assert lines[-1].startswith("scanning: done, 100.0 % (")
    out = io.StringIO()
    with Progress("generating", unit="references", stream=out, interval=0) as p:
        p(1234, None)
        p(5678, 0)  # 0: total unknown
    assert out.getvalue().splitlines() == [
        "generating: 1,234 references (0 s)",
        "generating: 5,678 references (0 s)",
        "generating: done, 5,678 references (0 s)",
    ]


def test_a_line_with_a_total_says_how_long_is_left(monkeypatch):
    import simsched.progress as progress

    now = [100.0]
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    out = io.StringIO()
    with Progress("generating heat", unit="references", stream=out, interval=0) as p:
        now[0] = 110.0
        p(1_000, 4_000)  # a quarter in 10 s: 30 s left
        now[0] = 130.0
        p(2_000, 4_000)
        now[0] = 150.0
        p(4_000, 4_000)  # nothing left to say
        now[0] = 160.0
    assert out.getvalue().splitlines() == [
        "generating heat: 25.0 %, 30 s left (10 s)",
        "generating heat: 50.0 %, 30 s left (30 s)",
        "generating heat: 100.0 % (50 s)",
        "generating heat: done, 100.0 % (60 s)",
    ]


def test_a_detail_is_added_to_every_line_and_to_the_bar():
    """A replay whose cores only retry leaves its count still: the cycle it reached and its
    strands done (the detail) show whether it moves."""
    where = iter(["cycle 10, 0 of 4 strands done", "cycle 99, 4 of 4 strands done"])
    out = io.StringIO()
    with Progress("simulating x", stream=out, interval=0, detail=lambda: next(where)) as p:
        p(0, 8)
    assert out.getvalue().splitlines() == [
        "simulating x: 0.0 %; cycle 10, 0 of 4 strands done (0 s)",
        "simulating x: done, 0.0 %; cycle 99, 4 of 4 strands done (0 s)",
    ]
    out = _Tty()
    with Progress("x", stream=out, interval=0, detail=lambda: "cycle 7") as p:
        p(1, 2)
        assert p._bar.tasks[0].fields["text"] == "50.0 %; cycle 7"


def test_run_progress_says_the_cycle_and_the_strands_done(tmp_path, capsys):
    """With the references done, a replay's lines tell the cycle reached and the strands
    done (the engine's own reports while no strand finishes: tests/engine/test_replay.py)."""
    sst = tmp_path / "fib.sst"
    _stderr_of(capsys, "trace", "gen", "fib", "-p", "n=6", "-o", str(sst))
    err = _stderr_of(capsys, "run", "-t", str(sst), "-m", "itrs-scaling-2", "--progress")
    assert "simulating ws on itrs-scaling-2: done, 100.0 %; cycle " in err
    assert " strands done (" in err


def test_lines_are_at_most_one_per_interval_and_a_failed_step_has_no_done_line():
    out = io.StringIO()
    with pytest.raises(RuntimeError), Progress("x", stream=out, interval=3600) as p:
        for i in range(100):
            p(i, 100)
        raise RuntimeError
    assert out.getvalue() == ""


def test_a_terminal_gets_a_bar_that_leaves_no_lines():
    out = _Tty()
    with Progress("x", stream=out, interval=0) as p:
        p(1, 2)
    assert "x: done" not in out.getvalue()


def _stderr_of(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*args])
    assert info.value.code in (0, None)
    return capsys.readouterr().err


def test_progress_flag_is_honoured_when_stderr_is_not_a_terminal(tmp_path, capsys):
    # Under pytest stderr is captured, not a terminal: the case of a redirected run.
    sst = tmp_path / "fib.sst"
    err = _stderr_of(capsys, "trace", "gen", "fib", "-p", "n=10", "-o", str(sst), "--progress")
    assert "generating fib: done, 100.0 % (" in err  # its total is known up front
    err = _stderr_of(capsys, "trace", "info", str(sst), "--progress")
    assert "fib.sst: footprint: done, 100.0 %" in err
    err = _stderr_of(capsys, "run", "-t", str(sst), "-m", "itrs-scaling-2", "--progress")
    assert "simulating ws on itrs-scaling-2: done, " in err
    # Without the flag, a non-terminal gets no progress at all.
    assert "done" not in _stderr_of(capsys, "trace", "info", str(sst))


def test_generate_and_summary_report_through_their_callbacks(tmp_path):
    from simsched.trace import summary

    seen: list[tuple[int, int | None]] = []
    h = generate(
        "fib", tmp_path / "f.sst", n=15, chunk_refs=4096, progress=lambda d, t: seen.append((d, t))
    )
    # the total is known before the first reference (fib's references(params)) and reached
    assert len(seen) > 1 and seen[-1] == (h.n_refs, h.n_refs)
    assert all(t == h.n_refs for _, t in seen)
    seen.clear()
    summary(tmp_path / "f.sst", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (h.n_refs, h.n_refs)


def test_plural_agrees_with_its_count():
    from simsched.progress import plural

    assert [plural(n, "point") for n in (0, 1, 2)] == ["0 points", "1 point", "2 points"]
    assert plural(1234, "time", thousands=True) == "1,234 times"
    assert (
        plural(1, "entry", "entries") == "1 entry" and plural(3, "entry", "entries") == "3 entries"
    )
