"""The figure scripts' shared endings: a missing sweep folder exits 2, Ctrl-C 130, in one line."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simsched.experiments.scripts import json_line, load_figure_rows, run_script, usage_error
from tests.experiments.script_exits import one_line_exit


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
    # a folder of the spec's name outside the study's results: a mistyped path, no hint
    elsewhere = tmp_path / "elsewhere" / "published"
    err = one_line_exit(capsys, lambda: load_figure_rows(elsewhere, study))
    assert str(elsewhere) in err and "sweep run" not in err


def test_rows_of_several_folders_are_concatenated_ok_only(tmp_path):
    for name, status in (("a", "ok"), ("b", "error")):
        pd.DataFrame({"status": ["ok", status], "x": [1, 2]}).to_csv(tmp_path / f"{name}.csv")
    df = load_figure_rows([tmp_path / "a.csv", tmp_path / "b.csv"])
    assert list(df["status"]) == ["ok"] * 3 and len(df) == 3


def test_a_folder_without_a_successful_run_ends_in_one_line(tmp_path, capsys):
    from simsched.experiments import store

    study = tmp_path / "mystudy"
    (study / "results" / "medium" / "points").mkdir(parents=True)
    (study / "medium.yaml").write_text("name: x\n")
    # a sweep started but no point finished: a table without columns, a KeyError before
    err = one_line_exit(capsys, lambda: load_figure_rows(study / "results" / "medium", study))
    assert "no point has finished yet" in err
    assert "`simsched sweep run experiments/mystudy/medium.yaml`" in err
    assert store.load_ok_results(study / "results" / "medium").empty
    # every point failed: the first error is named, and the retry
    failed = tmp_path / "failed.csv"
    rows = {"status": ["error", "error"], "error": ["ValueError: boom\nmore", "X: y"]}
    pd.DataFrame(rows).to_csv(failed)
    err = one_line_exit(capsys, lambda: load_figure_rows([tmp_path / "ok.csv", failed]))
    assert "ok.csv" in err  # a missing first folder is named first
    pd.DataFrame({"status": ["ok"], "x": [1]}).to_csv(tmp_path / "ok.csv")
    err = one_line_exit(capsys, lambda: load_figure_rows([tmp_path / "ok.csv", failed]))
    assert err == (
        f"make_figures.py: {failed}: all 2 of its points failed (the first: ValueError: "
        "boom); fix the cause and run `simsched sweep run SPEC --retry-failed`\n"
    )


def test_ctrl_c_ends_a_script_in_one_line_with_status_130(capsys):
    def interrupted():
        raise KeyboardInterrupt

    err = one_line_exit(capsys, lambda: run_script(interrupted, prog="x.py"), status=130)
    assert err.startswith("x.py: interrupted")
    # a usage error keeps its own status and line; a script that ends well returns
    err = one_line_exit(capsys, lambda: run_script(lambda: usage_error("bad", prog="x.py")))
    assert err == "x.py: bad\n"
    assert run_script(lambda: 1) is None


def test_a_table_the_figures_cannot_draw_ends_a_script_in_one_line(capsys):
    from simsched.errors import ConfigError

    def draw():  # e.g. the folder of another study: none of this one's workloads
        raise ConfigError("workloads=[]: give at least one workload name")

    err = one_line_exit(capsys, lambda: run_script(draw, prog="x.py"))
    assert err == "x.py: workloads=[]: give at least one workload name\n"


def test_json_line_writes_missing_values_as_null():
    import json

    import numpy as np

    # a program one scheduler did not run: pandas gives NaN, which json.dumps writes bare
    line = json_line({"a": {"ws": 1.0, "cats": float("nan")}, "b": [np.float64("inf"), 2]})
    assert json.loads(line) == {"a": {"ws": 1.0, "cats": None}, "b": [None, 2]}
    assert "NaN" not in line and "Infinity" not in line


def test_a_folder_of_another_study_is_refused_by_name(tmp_path, capsys):
    """A LAWS or CAB script given a PDF sweep ended in a KeyError on a column its machines
    lack; the CAB script given a LAWS sweep drew empty figures and exited 0."""
    study = tmp_path / "cab"
    study.mkdir()
    rows = {"status": ["ok", "ok"], "scheduler_name": ["ws", "pdf"], "x": [1, 2]}
    pd.DataFrame(rows).to_csv(tmp_path / "pdf.csv")
    err = one_line_exit(
        capsys, lambda: load_figure_rows(tmp_path / "pdf.csv", study, schedulers=["cab"])
    )
    assert err == (
        f"make_figures.py: {tmp_path / 'pdf.csv'}: not a cab sweep: no successful run of cab "
        "(it ran pdf, ws)\n"
    )
    # one of the study's policies among the rows is enough
    df = load_figure_rows(tmp_path / "pdf.csv", study, schedulers=["cab", "pdf"])
    assert len(df) == 2


def test_the_study_and_run_folders_are_taken_as_any_path(tmp_path, capsys):
    """A study or run folder given as a str failed with a TypeError at its first ``/``
    (default_figures, load_figure_rows, load_run): only a pathlib.Path was taken."""
    from simsched.experiments.scripts import default_figures, load_run

    (tmp_path / "medium.yaml").write_text("")
    committed = tmp_path / "figures" / "medium"
    medium = tmp_path / "results" / "medium"
    assert default_figures(str(medium), str(tmp_path), str(committed)) == committed
    err = one_line_exit(capsys, lambda: load_figure_rows(str(medium), str(tmp_path)))
    assert "`simsched sweep run experiments/" in err and "/medium.yaml`" in err
    import simsched
    from simsched.workloads import generate

    trace = tmp_path / "fib.sst"
    generate("fib", trace, n=8)
    run = simsched.run(trace, "itrs-scaling-2", "ws", out_dir=tmp_path / "run", speedup=False)
    digest = run.record["trace_digest"]
    record, timeline = load_run(str(tmp_path / "run"), digest, str(trace))
    assert record["trace_digest"] == digest and len(timeline["core"]) > 0


def test_a_studys_point_table_keeps_the_columns_it_has_in_order(tmp_path):
    from simsched.experiments.scripts import write_points

    df = pd.DataFrame(
        {"seed": [1, 0, 0], "scheduler": ["ws", "ws", "cab"], "makespan_cycles": [3, 2, 1]}
    )
    path = write_points(
        df, tmp_path / "points.csv", ["scheduler", "seed", "bl", "makespan_cycles", "seed"],
        ["workload", "scheduler", "seed"],
    )  # fmt: skip
    back = pd.read_csv(path)
    assert list(back.columns) == ["scheduler", "seed", "makespan_cycles"]  # no bl: left out
    assert back.values.tolist() == [["cab", 0, 1], ["ws", 0, 2], ["ws", 1, 3]]


#: Ctrl-C at a study script's first import after simsched.interrupts.while_loading: an
#: import hook sends the signal when the script asks for numpy, so the interrupt falls
#: where a user's first-second Ctrl-C falls (the libraries loading), every time.
_INTERRUPT_AT_IMPORT = """
import importlib.abc, os, runpy, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "numpy":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = [sys.argv[1], "--help"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _study_scripts() -> list[Path]:
    root = Path(__file__).resolve().parents[2] / "experiments"
    return sorted(p for p in root.glob("*/*.py") if "run_script(" in p.read_text())


@pytest.mark.parametrize("script", _study_scripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ctrl_c_while_a_script_loads_its_libraries_is_one_line_and_130(script):
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_AT_IMPORT, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == f"{script.name}: interrupted (Ctrl-C)\n"


def test_a_script_run_gives_ctrl_c_back_to_python_before_main():
    from simsched.interrupts import while_loading

    before = signal.getsignal(signal.SIGINT)
    try:
        while_loading()
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler

        def main():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

        run_script(main)
    finally:
        signal.signal(signal.SIGINT, before)
