"""``simsched plot timeline / allotment / iterations``: what is wrong with a run's path."""

from __future__ import annotations

import json

import pytest

import simsched
from simsched.plotting.iterations import NO_TIMES_WHY
from tests.cli.test_errors import one_line
from tests.engine.machines import TWO_BY_TWO


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


def test_a_trace_for_a_job_set_is_refused_as_export_refuses_it(cli, fib_trace, tmp_path):
    """It was compared with the set's record, which has no trace digest: "--trace fib.sst:
    digest 1a2b... is not the run's trace (None...)"."""
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"jobs:\n  - {{trace: {fib_trace}, scheduler: ws, copies: 2}}\n")
    simsched.run_jobs(jobs, TWO_BY_TWO, out_dir=tmp_path / "run")
    said = "simsched: error: --trace applies to single runs; a job set's config names its traces"
    for command in (["plot", "timeline"], ["export", "timeline"]):
        out = tmp_path / ("f.png" if command[0] == "plot" else "f.json")
        code, _, err = cli(*command, tmp_path / "run", "-o", out, "--trace", fib_trace)
        assert code == 2 and one_line(err) == said
        assert not out.exists()
    # --level asked for --trace, which is refused: it says what holds instead
    code, _, err = cli(
        "plot", "timeline", tmp_path / "run", "-o", tmp_path / "f.png", "--level", "2"
    )
    assert code == 2 and "--level applies to single runs" in one_line(err)


def test_runs_without_iteration_times_are_named(cli, fib_trace, tmp_path):
    """It was "no record has iteration_cycles ...", naming none of the runs given."""
    simsched.run(fib_trace, TWO_BY_TWO, "ws", out_dir=tmp_path / "run", speedup=False)
    code, _, err = cli("plot", "iterations", tmp_path / "run", "-o", tmp_path / "f.png")
    assert code == 2 and one_line(err) == (
        f"simsched: error: {tmp_path / 'run'}: the run recorded no iteration times ({NO_TIMES_WHY})"
    )
    code, _, err = cli(
        "plot", "iterations", tmp_path / "run", tmp_path / "run", "-o", tmp_path / "f.png"
    )
    assert code == 2 and one_line(err).startswith(
        "simsched: error: none of the 2 runs recorded iteration times (iteration_ends, "
    )
    assert not (tmp_path / "f.png").exists()
    # a table's text column "[]" is no iteration times either: the check here read it as
    # some, and the figure's own check then gave its message without the run's name
    rec = json.loads((tmp_path / "run" / "result.json").read_text())
    (tmp_path / "run" / "result.json").write_text(json.dumps({**rec, "iteration_cycles": "[]"}))
    code, _, err = cli("plot", "iterations", tmp_path / "run", "-o", tmp_path / "f.png")
    assert code == 2 and f"{tmp_path / 'run'}: the run recorded no iteration times" in err


def test_a_run_without_iteration_times_among_others_is_named(cli, fib_trace, tmp_path):
    """It was left out of the figure without a word (exit 0)."""
    from simsched.workloads import generate

    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=16, ny=16, iters=3, cutoff=4)
    simsched.run(heat, TWO_BY_TWO, "laws", out_dir=tmp_path / "laws", speedup=False)
    simsched.run(fib_trace, TWO_BY_TWO, "ws", out_dir=tmp_path / "ws", speedup=False)
    code, _, err = cli(
        "plot", "iterations", tmp_path / "laws", tmp_path / "ws", "-o", tmp_path / "f.png"
    )
    assert code == 2 and one_line(err) == (
        f"simsched: error: {tmp_path / 'ws'}: the run recorded no iteration times ({NO_TIMES_WHY})"
    )
    assert not (tmp_path / "f.png").exists()
    code, out, _ = cli("plot", "iterations", tmp_path / "laws", "-o", tmp_path / "f.png")
    assert code == 0 and (tmp_path / "f.png").exists()
    # WS on the heat keeps its iterations' ends: it is drawn beside LAWS (it was refused
    # as recording no iteration times)
    simsched.run(heat, TWO_BY_TWO, "ws", out_dir=tmp_path / "ws-heat", speedup=False)
    code, out, _ = cli(
        "plot", "iterations", tmp_path / "laws", tmp_path / "ws-heat", "-o", tmp_path / "g.png"
    )
    assert code == 0 and (tmp_path / "g.png").exists()


def test_timeline_options_for_subtrees_are_refused_with_another_colouring(cli, fib_trace, tmp_path):
    """--trace and --level choose subtrees; with --color-by socket they were ignored."""
    simsched.run(fib_trace, TWO_BY_TWO, "ws", out_dir=tmp_path / "run", speedup=False)
    for extra, said in (
        (["--trace", "nosuch.sst"], "--trace applies to --color-by subtree, not socket"),
        (["--level", "2"], "--level applies to --color-by subtree, not socket"),
    ):
        code, _, err = cli(
            "plot", "timeline", tmp_path / "run", "-o", tmp_path / "f.png",
            "--color-by", "socket", *extra,
        )  # fmt: skip
        assert code == 2 and one_line(err) == f"simsched: error: {said}"
        assert not (tmp_path / "f.png").exists()


def test_a_run_whose_trace_is_unknown_says_why_its_colours_are_per_frame(cli, fib_trace, tmp_path):
    """A damaged config.json gave the per-frame colours (and export's note) without the
    reason; the note names the file and what is wrong with it."""
    run = tmp_path / "run"
    simsched.run(fib_trace, TWO_BY_TWO, "ws", out_dir=run, speedup=False)
    (run / "config.json").write_text("{")
    code, _, err = cli("plot", "timeline", run, "-o", tmp_path / "f.png")
    assert code == 0 and err == (
        f"note: {run / 'config.json'} is not readable JSON: strands are coloured one per "
        "frame, not per subtree (give --trace)\n"
    )
    code, out, _ = cli("export", "timeline", run, "-o", tmp_path / "f.json")
    assert code == 0 and f"({run / 'config.json'} is not readable JSON)" in out
    (run / "config.json").write_text('{"trace": "gone.sst"}')
    code, _, err = cli("plot", "timeline", run, "-o", tmp_path / "f.png")
    assert "names the trace gone.sst, which is not a file" in err
