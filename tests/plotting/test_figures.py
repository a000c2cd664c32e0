"""Standard figures: aggregation over seeds, normalisation, and figure files."""

from __future__ import annotations

import os
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from simsched.cli.sweep import register_plot  # noqa: E402
from simsched.errors import ConfigError, command_line  # noqa: E402
from simsched.plotting import (  # noqa: E402
    aggregate,
    figure_speedup_misses,
    figure_time_vs_cores,
    line_plot,
    mpki_by_config,
    normalised_time,
    normalised_time_bars,
    save,
    speedup_vs_cores,
    style,
    style_path,
    sweep_figure,
)


def results() -> pd.DataFrame:
    rows = []
    for wl in ("mergesort", "hashjoin"):
        for family, cores_list in (("itrs-scaling-", (1, 2, 4)), ("itrs-45nm-", (1, 10, 26))):
            for cores in cores_list:
                for sched, seeds in (("ws", (0, 1, 2)), ("pdf", (0,))):
                    for seed in seeds:
                        t = 1000.0 / cores * (1.2 if sched == "ws" else 1.0) + seed
                        rows.append(
                            {
                                "workload": wl,
                                "machine": f"{family}{cores}",
                                "cores": cores,
                                "scheduler": sched,
                                "seed": seed,
                                "status": "ok",
                                "makespan_cycles": t,
                                "speedup": 1000.0 / t,
                                "mpki": 2.0 if sched == "ws" else 1.5,
                            }
                        )
    rows.append({**rows[0], "status": "error", "makespan_cycles": None, "seed": 9})
    return pd.DataFrame(rows)


def test_aggregate_over_seeds_skips_failures():
    agg = aggregate(results(), "cores", "makespan_cycles", "scheduler")
    ws1 = agg[(agg["scheduler"] == "ws") & (agg["cores"] == 1)].iloc[0]
    # ws at 1 core: both families and workloads, seeds 0..2 -> 1200 + {0,1,2}
    assert (ws1["min"], ws1["mean"], ws1["max"], ws1["n"]) == (1200.0, 1201.0, 1202.0, 12)


def test_a_sampled_runs_interval_widens_its_bar():
    """A sampled run's makespan and speedup are extrapolations: the bars span their 95 %
    intervals (a list in a sweep's table, JSON text in a CSV), not only the seeds' spread;
    a detailed row, an unbounded end or a table without the columns leaves them as before."""
    rows = [
        {"scheduler": "ws", "cores": 4, "status": "ok", "speedup": 3.0, "sampled": True,
         "speedup_ci95": [2.8, 3.1], "makespan_cycles": 100, "makespan_ci95": "[90, 104]"},
        {"scheduler": "ws", "cores": 4, "status": "ok", "speedup": 3.2, "sampled": False,
         "speedup_ci95": [3.2, 3.2], "makespan_cycles": 94, "makespan_ci95": "[94, 94]"},
        {"scheduler": "pdf", "cores": 4, "status": "ok", "speedup": 3.5, "sampled": True,
         "speedup_ci95": [3.4, None], "makespan_cycles": 86, "makespan_ci95": "[-3, 175]"},
    ]  # fmt: skip
    df = pd.DataFrame(rows)
    agg = aggregate(df, "cores", "speedup", "scheduler").set_index("scheduler")
    assert (agg.loc["ws", "min"], agg.loc["ws", "max"]) == (3.0, 3.2)
    assert (agg.loc["ws", "lo"], agg.loc["ws", "hi"]) == (2.8, 3.2)
    assert (agg.loc["pdf", "lo"], agg.loc["pdf", "hi"]) == (3.4, 3.5)
    agg = aggregate(df, "cores", "makespan_cycles", "scheduler").set_index("scheduler")
    assert (agg.loc["ws", "lo"], agg.loc["ws", "hi"]) == (90, 104)
    assert (agg.loc["pdf", "lo"], agg.loc["pdf", "hi"]) == (-3, 175)
    plain = aggregate(df.drop(columns="sampled"), "cores", "speedup", "scheduler")
    assert list(plain["lo"]) == list(plain["min"]) and list(plain["hi"]) == list(plain["max"])
    ax = line_plot(df, "cores", "speedup")
    try:
        (_, _, (bars,)) = next(c for c in ax.containers if c.get_label() == "ws")
        ((_, low), (_, high)) = bars.get_segments()[0]
        assert (low, high) == pytest.approx((2.8, 3.2))
    finally:
        plt.close(ax.figure)


def test_a_sweep_figure_says_when_sampled_intervals_widen_its_bars():
    """A bar widened to a sampled run's interval would read as a spread over seeds: the
    figure's caption says how many runs widened one; a figure of detailed runs (or of a
    column no run extrapolates) has no caption."""

    def captions(df, y):
        fig = sweep_figure(df, "scheduler", y, warn=lambda _: None)
        try:
            return [t.get_text() for t in fig.texts]
        finally:
            plt.close(fig)

    rows = [
        {"scheduler": "ws", "status": "ok", "speedup": 3.0, "sampled": True,
         "speedup_ci95": "[2.8, 3.1]", "L2_misses": 5},
        {"scheduler": "ws", "status": "ok", "speedup": 3.2, "sampled": False,
         "speedup_ci95": "[3.2, 3.2]", "L2_misses": 6},
        {"scheduler": "pdf", "status": "ok", "speedup": 3.5, "sampled": True,
         "speedup_ci95": "[3.5, 3.5]", "L2_misses": 4},
    ]  # fmt: skip
    df = pd.DataFrame(rows)
    assert captions(df, "speedup") == [
        "bars: min–max over seeds, widened to the 95 % intervals of 1 sampled run"
    ]
    assert captions(df, "L2_misses") == []
    assert captions(df.assign(sampled=False), "speedup") == []


def test_normalised_time_divides_by_baseline_mean():
    df = normalised_time(results(), baseline="ws")
    pdf = df[
        (df["scheduler"] == "pdf")
        & (df["machine"] == "itrs-scaling-2")
        & (df["workload"] == "mergesort")
    ]
    assert pdf["norm_time"].iloc[0] == pytest.approx(500.0 / 601.0)
    ws = df[
        (df["scheduler"] == "ws")
        & (df["machine"] == "itrs-scaling-1")
        & (df["workload"] == "hashjoin")
    ]
    assert ws["norm_time"].mean() == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="no successful run"):
        normalised_time(results(), baseline="cab")


def test_unknown_column_is_a_config_error():
    with pytest.raises(ConfigError, match="no column 'nope'"):
        aggregate(results(), "cores", "nope")


def test_an_unknown_column_names_the_columns_it_may_mean():
    """The message listed the first 20 columns, a sweep's parameters, as if they were all:
    --y makespan named neither makespan_cycles nor that the list went on."""
    df = results()
    for i in range(20):
        df.insert(0, f"workload.p{i}", i)  # parameters come first in a sweep's table
    with pytest.raises(ConfigError, match=r"no column 'makespan' in the results \(did you "
                       r"mean makespan_cycles\?\)$"):  # fmt: skip
        aggregate(df, "cores", "makespan")
    with pytest.raises(ConfigError, match=r"\(have: workload.p19, .*, \.\.\. \(29 columns\)\)$"):
        aggregate(df, "cores", "zzz")
    # a blank name is in every column's: it was "did you mean workload.p19, ...?"
    for blank in ("", " "):
        with pytest.raises(ConfigError, match=rf"no column '{blank}' in the results \(have: "):
            aggregate(df, "cores", blank)


def test_an_unknown_column_of_the_sweep_figure_names_its_option():
    """It was "no column 'nope' in the results (...)", whichever of --x, --y, --hue or --col
    gave it.  A Python caller is told of the argument, the command line of the option."""
    df = results()
    for name in ("x", "y", "hue", "col"):
        args = {"x": "cores", "y": "makespan_cycles", name: "nope"}
        with pytest.raises(ConfigError, match=rf"^{name}='nope': no column 'nope' in the results"):
            sweep_figure(df, args.pop("x"), args.pop("y"), **args)
        with command_line(), pytest.raises(ConfigError, match=rf"^--{name} 'nope': no column"):
            sweep_figure(df, **{"x": "cores", "y": "makespan_cycles", name: "nope"})


def test_style_file_is_packaged_and_applies():
    assert style_path().is_file()
    with style():
        assert plt.rcParams["axes.spines.top"] is False


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
def test_standard_figures_write_files(tmp_path):
    df = results()
    fig, axes = plt.subplots(1, 3)
    speedup_vs_cores(df[df["workload"] == "mergesort"], axes[0])
    mpki_by_config(df, axes[1])
    normalised_time_bars(df, axes[2])
    assert len(axes[0].get_lines()) >= 2
    paths = [
        save(fig, tmp_path / "three.png"),
        save(figure_speedup_misses(df, ["mergesort", "hashjoin"]), tmp_path / "fig2.png"),
        save(figure_time_vs_cores(df, ["mergesort", "hashjoin"]), tmp_path / "fig3.pdf"),
        save(
            sweep_figure(df, "machine", "mpki", "scheduler", col="workload"), tmp_path / "bars.svg"
        ),
    ]
    for p in paths:
        assert p.stat().st_size > 1000
    assert not list(tmp_path.glob(".*"))  # no temporary files left


def test_plot_sweep_command(tmp_path):
    df = results()
    df.to_parquet(tmp_path / "r.parquet")
    app = typer.Typer()
    register_plot(app)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps typer's sub-command syntax
        pass

    out = tmp_path / "fig.png"
    res = CliRunner().invoke(
        app,
        [
            "sweep",
            str(tmp_path / "r.parquet"),
            "--x",
            "cores",
            "--y",
            "speedup",
            "--hue",
            "scheduler",
            "--where",
            "workload=hashjoin",
            "--logx",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 1000
    res = CliRunner().invoke(
        app, ["sweep", str(tmp_path / "r.parquet"), "--x", "cores", "--y", "bogus", "-o", str(out)]
    )
    assert isinstance(res.exception, ConfigError)


def test_a_sweep_with_no_finished_point_says_so(tmp_path):
    """Its table has no columns: the error blamed the x option ("no column 'seed' in
    the results (have: )")."""
    (tmp_path / "points").mkdir()
    app = typer.Typer()
    register_plot(app)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps typer's sub-command syntax
        pass

    res = CliRunner().invoke(
        app,
        ["sweep", str(tmp_path), "--x", "seed", "--y", "makespan_cycles", "-o", "f.png"],
    )
    assert isinstance(res.exception, ConfigError)
    assert str(res.exception) == "no runs to plot: the results have no rows (no point has finished)"
    # rows that a filter leaves out keep their columns: the option is still checked
    with pytest.raises(ConfigError, match="no column 'bogus'"):
        sweep_figure(results().iloc[:0], "bogus", "makespan_cycles")


def test_a_sweep_whose_every_point_failed_says_so():
    """Its table has no metric columns: the error blamed --y ("no column
    'makespan_cycles' in the results")."""
    failed = pd.DataFrame(
        {"seed": [0, 1], "status": ["error", "error"], "error": ["ConfigError: x\nmore", "y"]}
    )
    with pytest.raises(ConfigError) as info:
        sweep_figure(failed, "seed", "makespan_cycles")
    assert str(info.value) == (
        "no successful runs to plot: all 2 runs failed (the first: ConfigError: x)"
    )
    with pytest.raises(ConfigError, match="^no successful runs to plot: its one run failed$"):
        sweep_figure(failed.iloc[:1].drop(columns="error"), "seed", "makespan_cycles")


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_an_axis_column_without_a_value_in_the_selected_rows_is_refused(tmp_path, missing):
    """`plot sweep DIR --x seed --y sample_iterations`, a field no row had, drew an empty
    figure and exited 0 without a word."""
    from simsched.cli import main
    from simsched.experiments.store import save_row

    df = results().assign(sample_iterations=missing)
    df.loc[df["status"] != "ok", "sample_iterations"] = 3  # a failed row's is not drawn
    successful = (df["status"] == "ok").sum()
    for x, y, option in (
        ("seed", "sample_iterations", "y"),
        ("sample_iterations", "speedup", "x"),
    ):
        with pytest.raises(ConfigError) as info:
            sweep_figure(df, x, y)
        assert str(info.value) == (
            f"{option}='sample_iterations': the column has no values in the selected rows "
            f"({successful} successful runs)"
        )
        with command_line(), pytest.raises(ConfigError) as info:
            sweep_figure(df, x, y)
        assert str(info.value).startswith(f"--{option} sample_iterations: the column has no")
    for i in range(2):
        row = {"point_id": f"p{i}", "status": "ok", "seed": i, "sample_iterations": None}
        save_row(tmp_path / "sweep", f"p{i}", row)
    out = tmp_path / "f.png"
    args = ["plot", "sweep", str(tmp_path / "sweep"), "--x", "seed", "--y", "sample_iterations"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "-o", str(out)])
    assert exit_info.value.code == 2 and not out.exists()


def test_infinite_and_oversized_numbers_are_refused_not_drawn():
    """A damaged table: inf in --y was drawn with matplotlib's RuntimeWarnings, inf in a
    --logx column failed inside matplotlib (OverflowError), and an integer past float's
    range in --y or in the sampled column failed in pandas, each with a traceback."""
    df = results()
    quiet = lambda _: None  # noqa: E731 - the mixed rows' warning is not what is tested
    with pytest.raises(ConfigError, match=r"^y='speedup': holds an infinite value \(inf\)"):
        sweep_figure(df.assign(speedup=float("inf")), "cores", "speedup", warn=quiet)
    with pytest.raises(ConfigError, match=r"^logx=True: column 'speedup': holds an infinite"):
        sweep_figure(
            df.assign(speedup=float("inf")), "speedup", "makespan_cycles", logx=True, warn=quiet
        )
    huge = pd.Series([10**400] * len(df), dtype=object)
    with pytest.raises(ConfigError, match=r"^y='makespan_cycles': holds a number too large"):
        sweep_figure(df.assign(makespan_cycles=huge), "cores", "makespan_cycles", warn=quiet)
    fig = sweep_figure(df.assign(sampled=huge), "cores", "makespan_cycles", warn=quiet)
    assert not fig.texts
    plt.close("all")


def test_a_table_whose_status_is_empty_is_not_said_to_have_failed():
    """A table whose status column had lost its values said "all 4 runs failed"."""
    df = results().assign(status=None)
    with pytest.raises(ConfigError, match=r"no successful runs to plot: the status column is "):
        sweep_figure(df, "cores", "makespan_cycles", warn=lambda _: None)


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
def test_log_x_needs_positive_values_and_hue_may_be_x():
    """Used to fail with matplotlib's 'Data cannot be log-scaled' and pandas' 'cannot
    insert seed, already exists'."""
    df = results()
    with pytest.raises(ConfigError, match="^logx=True: column 'seed' has values <= 0"):
        sweep_figure(df, "seed", "makespan_cycles", logx=True)
    with command_line(), pytest.raises(ConfigError, match="^--logx: column 'seed' has values"):
        sweep_figure(df, "seed", "makespan_cycles", logx=True)
    with pytest.raises(ConfigError, match="^logx='yes': expected True or False"):
        sweep_figure(df, "cores", "makespan_cycles", logx="yes")
    with pytest.raises(ConfigError, match="^logx='no': expected True or False"):
        line_plot(df, "cores", "makespan_cycles", logx="no")  # "no" drew a log axis
    fig = sweep_figure(df, "seed", "makespan_cycles", "seed")  # a colour per seed
    assert len(fig.axes[0].get_legend().get_texts()) == 3  # seeds 0, 1, 2 ran
    fig = sweep_figure(df, "scheduler", "makespan_cycles", "scheduler")
    assert len(fig.axes[0].patches) == 2 * 2  # each scheduler's bars at both positions
    plt.close("all")


def test_a_mark_that_averages_other_runs_than_seeds_is_warned_about():
    """``plot sweep`` said "mean over seeds" while a mark at 1 core averaged both workloads
    and both machine families without a word."""
    df = results()
    told: list[str] = []
    sweep_figure(df, "cores", "makespan_cycles", "scheduler", warn=told.append)
    assert told == [
        "each mark averages rows of several workloads (hashjoin, mergesort), machines "
        "(itrs-45nm-1, itrs-45nm-10, itrs-45nm-26, ...); give them hue= or col=, or keep "
        "one with filter_frame(df, wheres)"
    ]
    told.clear()
    with command_line():
        sweep_figure(df, "cores", "makespan_cycles", "scheduler", warn=told.append)
    assert told[0].endswith("; give them --hue or --col, or keep one with --where")
    told.clear()
    one = df[df["machine"].str.startswith("itrs-scaling-")]
    sweep_figure(one, "cores", "makespan_cycles", "scheduler", col="workload", warn=told.append)
    sweep_figure(one, "machine", "makespan_cycles", "workload", col="scheduler", warn=told.append)
    assert told == []
    with pytest.warns(UserWarning, match="averages rows of several workloads"):
        sweep_figure(one, "cores", "makespan_cycles", "scheduler")
    plt.close("all")


def test_a_refused_figure_is_not_warned_about_first():
    """`plot sweep --x seed --logx` printed the warning of marks that average several runs,
    then the error: two lines for one refusal."""
    told: list[str] = []
    with pytest.raises(ConfigError, match="a log axis needs x > 0"):
        sweep_figure(results(), "seed", "makespan_cycles", logx=True, warn=told.append)
    with pytest.raises(ConfigError, match="not a numeric column"):
        sweep_figure(results(), "cores", "workload", warn=told.append)
    assert told == []


def test_the_sweep_figures_warning_names_the_callers_line():
    """Its fixed stack level named the figure module's wrapper, not the caller."""
    df = results()
    scaling = df[df["machine"].str.startswith("itrs-scaling-")]
    with pytest.warns(UserWarning, match="averages rows of several workloads") as told:
        sweep_figure(scaling, "cores", "speedup", "scheduler")
    assert told[0].filename == __file__
    plt.close("all")


def test_standard_figures_warn_of_marks_that_average_several_workloads():
    """``speedup_vs_cores(df)`` and ``mpki_by_config(df)`` averaged both workloads into each
    mark without a word, their min-max bar spanning workloads, not seeds."""
    df = results()
    scaling = df[df["machine"].str.startswith("itrs-scaling-")]
    with pytest.warns(UserWarning, match="averages rows of several workloads") as told:
        speedup_vs_cores(scaling)
    assert str(told[0].message) == (
        "each mark averages rows of several workloads (hashjoin, mergesort); give them hue=, "
        "or keep one with filter_frame(df, wheres)"
    )
    assert told[0].filename == __file__  # the caller's line, not the figure module's
    with pytest.warns(UserWarning, match="several workloads .*; give them config= or hue="):
        mpki_by_config(df)
    one = df[df["workload"] == "mergesort"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        speedup_vs_cores(scaling[scaling["workload"] == "mergesort"])
        mpki_by_config(one)
        mpki_by_config(one, config="scheduler", hue="machine")
    plt.close("all")


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
def test_user_text_is_drawn_literally(tmp_path):
    """Names with ``$`` used to stop the figure with a mathtext ParseException."""
    df = results()
    df["workload"] = df["workload"].replace("mergesort", r"p$\frac{$")
    df["scheduler"] = df["scheduler"].replace("ws", "$_$")
    fig = sweep_figure(df, "cores", "makespan_cycles", "scheduler", col="workload", logx=True)
    save(fig, tmp_path / "f.png")
    titles = [ax.get_title() for ax in fig.axes]
    assert r"workload = p\$\frac{\$" in titles
    fig = sweep_figure(df, "workload", "mpki", "scheduler")
    save(fig, tmp_path / "g.png")


@pytest.mark.parametrize(
    "draw",
    [
        lambda df: aggregate(df, "cores", "speedup"),
        lambda df: speedup_vs_cores(df),
        lambda df: mpki_by_config(df),
        lambda df: normalised_time_bars(df),
        lambda df: sweep_figure(df, "cores", "speedup"),
        lambda df: figure_speedup_misses(df, ["mergesort"]),
        lambda df: figure_time_vs_cores(df, ["mergesort"]),
    ],
)
def test_a_table_that_is_no_dataframe_is_a_config_error(draw):
    for bad in (None, results().to_dict("records")):
        with pytest.raises(ConfigError, match=r"^df: expected a pandas DataFrame of results"):
            draw(bad)
    plt.close("all")


def test_averaging_a_text_column_names_it():
    df = results().assign(makespan_cycles=lambda d: d["makespan_cycles"].astype(str))
    with pytest.raises(ConfigError, match=r"column 'workload': not a numeric column"):
        aggregate(results(), "cores", "workload")
    with pytest.raises(ConfigError, match=r"column 'makespan_cycles': not a numeric column"):
        normalised_time(df)
    with pytest.raises(ConfigError, match=r"column 'workload': not a numeric column"):
        line_plot(results(), "cores", "workload")
    # an object column of numbers is still averaged
    obj = results().assign(speedup=lambda d: d["speedup"].astype(object))
    assert len(aggregate(obj, "cores", "speedup")) == 5


@pytest.mark.parametrize("draw", [figure_speedup_misses, figure_time_vs_cores])
def test_a_lone_workload_name_is_refused(draw):
    # iterating "mergesort" used to draw one empty row per letter
    with pytest.raises(ConfigError, match=r"workloads='mergesort': expected a list of workload"):
        draw(results(), "mergesort")
    # any iterable of names is a list of names
    draw(results(), results()["workload"].unique())
    plt.close("all")


@pytest.mark.parametrize("draw", [figure_speedup_misses, figure_time_vs_cores])
def test_no_workloads_is_refused(draw):
    with pytest.raises(ConfigError, match=r"workloads=\[\]: give at least one workload"):
        draw(results(), [])


@pytest.mark.parametrize("zoom", [(10,), (10, 20, 26), ("a", "b"), 10])
def test_a_zoom_that_is_not_two_core_counts_is_refused(zoom):
    with pytest.raises(ConfigError, match=r"zoom=.*: expected \(lowest, highest\) cores"):
        figure_time_vs_cores(results(), ["mergesort"], zoom=zoom)
    figure_time_vs_cores(results(), ["mergesort"], zoom=None)
    plt.close("all")


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
def test_rows_without_a_value_of_hue_or_col_are_a_group_of_their_own():
    # a parameter of one workload only (a trace workload has no grain): NaN elsewhere
    df = results()
    df["workload.grain"] = df["workload"].map({"mergesort": 256}).astype(float)
    fig = sweep_figure(df, "cores", "speedup", "scheduler", col="workload.grain")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["workload.grain = 256", "workload.grain = n/a"]
    # hashjoin's rows used to vanish under an empty "nan" panel
    assert all(len(ax.get_lines()) > 0 for ax in fig.axes)
    fig = sweep_figure(df, "cores", "speedup", "workload.grain")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["256", "n/a"]
    plt.close("all")


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
@pytest.mark.parametrize(("x", "kind"), [("machine", "auto"), ("cores", "bar")])
def test_log_x_of_bars_is_refused(x, kind):
    # bars stand at categories: --logx was ignored without a word
    with pytest.raises(ConfigError, match=f"^logx=True: applies to line plots; x='{x}' is drawn"):
        sweep_figure(results(), x, "makespan_cycles", kind=kind, logx=True)
    with (
        command_line(),
        pytest.raises(ConfigError, match=f"^--logx: applies to line plots; --x {x} is"),
    ):
        sweep_figure(results(), x, "makespan_cycles", kind=kind, logx=True)


def test_a_pgf_figure_is_saved_or_refused_in_one_line(tmp_path, monkeypatch):
    """save passed metadata=None, which PGF refuses (a TypeError: no PGF file could be
    written), and a PGF figure with text and no TeX installed ended in a traceback."""
    from matplotlib.lines import Line2D

    fig = plt.figure()
    fig.add_artist(Line2D([0, 1], [0, 1]))  # no text: PGF writes it without TeX
    save(fig, tmp_path / "line.pgf")
    assert (tmp_path / "line.pgf").read_text().startswith("%% Creator: Matplotlib, PGF")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no TeX on the path
    fig, ax = plt.subplots()
    ax.set_title("text")
    tex = plt.rcParams["pgf.texsystem"]
    with pytest.raises(
        ConfigError, match=rf"text.pgf: a PGF figure needs {tex} \(TeX\) to lay out its text"
    ):
        save(fig, tmp_path / "text.pgf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["line.pgf"]


def test_a_pgf_figure_keeps_its_images_beside_it_under_its_name(tmp_path, monkeypatch):
    """A raster image was written beside the temporary (``.img.pgf.<random>.tmp-img0.png``),
    left behind and referenced by that name; and without TeX the figure ended in
    matplotlib's traceback, since placing an image asks TeX for a command."""
    import numpy as np
    from matplotlib.backends import backend_pgf

    from simsched.plotting import _saving

    def image_figure():
        fig = plt.figure()
        fig.figimage(np.arange(16.0).reshape(4, 4))
        return fig

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no TeX on the path
    with pytest.raises(ConfigError, match=r"img.pgf: a PGF figure needs .* \(TeX\)"):
        save(image_figure(), tmp_path / "out" / "img.pgf")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    # with TeX: matplotlib asks it which command includes a graphic
    monkeypatch.setattr(_saving, "check_tex", lambda path: None)
    monkeypatch.setattr(backend_pgf, "_get_image_inclusion_command", lambda: r"\includegraphics")
    save(image_figure(), tmp_path / "out" / "img.pgf")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["img-img0.png", "img.pgf"]
    text = (tmp_path / "out" / "img.pgf").read_text()
    assert "img-img0.png" in text and ".tmp" not in text


@pytest.mark.parametrize("fmt", ["pdf", "svg", "svgz", "ps", "eps"])
def test_a_figure_saved_twice_is_the_same_file(tmp_path, fmt, monkeypatch):
    """PDF, SVG and PostScript carried the clock's date (and SVG random ids, svgz the gzip
    time, PostScript the temporary's name): the same figure saved twice gave two files."""
    import gzip
    import time

    def draw():
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        ax.set_title("same")
        return fig

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # matplotlib's dates read it
    save(draw(), tmp_path / f"a.{fmt}")
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 86_400)  # a day later
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    save(draw(), tmp_path / f"b.{fmt}")
    assert os.environ["SOURCE_DATE_EPOCH"] == "86400"  # the user's setting is left as it was
    # a value that is no date ended a PDF or SVG save in matplotlib's int() (a traceback)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "abc")
    save(draw(), tmp_path / f"c.{fmt}")
    assert os.environ["SOURCE_DATE_EPOCH"] == "abc"
    a, b, c = ((tmp_path / f"{n}.{fmt}").read_bytes() for n in "abc")
    assert c == a
    if fmt == "svgz":
        assert gzip.decompress(a).startswith(b"<?xml")
    if fmt in ("ps", "eps"):
        assert a.startswith(b"%!PS")
    assert a == b


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: speedup_vs_cores(results(), "cores"), "ax='cores': expected matplotlib axes"),
        (lambda: mpki_by_config(results(), ax=[1, 2]), "ax=[1, 2]: expected matplotlib axes"),
        (lambda: speedup_vs_cores(results(), title=pd.DataFrame()), "title="),
        (lambda: aggregate(results(), None, "makespan_cycles"), "x=None: give the name"),
        (lambda: mpki_by_config(results(), config=None), "x=None: give the name"),
        (lambda: normalised_time(results(), hue=None), "hue=None: give the name"),
        (lambda: normalised_time(results(), baseline=["ws"]), "baseline=['ws']: expected one"),
        (lambda: normalised_time(results(), baseline=2**70), "baseline=1180591620717411303424"),
        (lambda: sweep_figure(results(), "cores", "speedup", kind=["line"]), "kind=['line']: use"),
        (lambda: sweep_figure(results(), "cores", "speedup", warn=3), "warn=3: expected a"),
        (
            lambda: figure_time_vs_cores(results(), ["mergesort"], machine_prefix=45),
            "machine_prefix=45: expected a text",
        ),
        (
            lambda: figure_time_vs_cores(results(), ["mergesort"], zoom=pd.DataFrame()),
            "zoom=",
        ),
    ],
)
def test_a_wrong_kind_of_argument_is_named(call, says):
    """Before: each ended inside matplotlib or pandas ("'str' object has no attribute
    'errorbar'", "The truth value of a DataFrame is ambiguous", "Python int too large",
    "'NoneType' object is not callable") without naming the argument."""
    with pytest.raises(ConfigError) as info:
        call()
    assert says in str(info.value)
    plt.close("all")


def test_an_empty_zoom_draws_no_zoomed_panel():
    fig = figure_time_vs_cores(results(), ["mergesort"], zoom=())
    assert len(fig.axes) == 1
    plt.close(fig)


@pytest.mark.parametrize("kind", ["bar", "line"])
def test_bars_or_lines_of_no_rows_are_refused(kind):
    """Before: ZeroDivisionError (the bar width divided by no hues); a line plot drew
    empty axes without a word."""
    from simsched.plotting.figures import bar_plot

    draw = bar_plot if kind == "bar" else line_plot
    empty = results().iloc[:0]
    with pytest.raises(ConfigError) as info:
        draw(empty, "cores", "mpki")
    assert str(info.value) == "no rows to plot (no run with a value of 'mpki')"
    failed = results().assign(status="error", error="boom")
    with pytest.raises(ConfigError) as info:
        draw(failed, "cores", "mpki")
    assert str(info.value) == (
        f"no rows to plot (no run with a value of 'mpki'): all {len(failed)} runs failed "
        "(the first: boom)"
    )
    with pytest.raises(ConfigError) as info:
        speedup_vs_cores(failed) if kind == "line" else mpki_by_config(failed)
    assert str(info.value).startswith("no rows to plot")
    plt.close("all")


@pytest.mark.parametrize(
    ("cores", "says"),
    [
        (0, "logx=True: column 'cores' has values <= 0 (e.g. 0); a log axis needs x > 0"),
        (-3, "logx=True: column 'cores' has values <= 0 (e.g. -3); a log axis needs x > 0"),
        ("x", "logx=True: column 'cores': not a numeric column (e.g. seed, makespan_cycles"),
    ],
)
def test_a_log_x_axis_of_a_line_plot_checks_x_as_the_sweep_figure_does(tmp_path, cores, says):
    """line_plot(logx=True) checked nothing: x all <= 0 failed in matplotlib at save time,
    text with "could not convert string to float", and a negative x was left out."""
    df = results()
    df.loc[df.index[0], "cores"] = cores if cores != "x" else None
    if cores == "x":
        df = df.assign(cores="x")
    with pytest.raises(ConfigError) as info:
        line_plot(df, "cores", "makespan_cycles", logx=True)
    assert str(info.value).startswith(says)
    plt.close("all")


@pytest.mark.filterwarnings("ignore:each mark averages rows")  # a mixed frame on purpose
@pytest.mark.parametrize(
    ("call", "says"),
    [
        (
            lambda df: line_plot(pd.concat([df, df[["cores"]]], axis=1), "cores", "speedup"),
            "df: column 'cores' appears twice",
        ),
        (
            lambda df: sweep_figure(
                pd.concat([df, df[["seed"]], df[["seed"]]], axis=1), "cores", "mpki"
            ),
            "df: column 'seed' appears 3 times",
        ),
        (
            lambda df: sweep_figure(df.assign(b=1 + 2j), "cores", "b"),
            "y='b': not a numeric column (e.g. cores, seed, makespan_cycles, speedup, mpki)",
        ),
        (
            lambda df: line_plot(df.assign(b=1 + 2j), "cores", "b"),
            "column 'b': not a numeric column (e.g. cores, seed, makespan_cycles, speedup, mpki)",
        ),
        (
            lambda df: figure_time_vs_cores(df, [["mergesort"]]),
            "workloads[0]=['mergesort']: expected one label, e.g. 'mergesort'",
        ),
    ],
)
def test_a_table_or_name_the_figures_cannot_draw_is_named(call, says):
    """Before: an AttributeError ("'DataFrame' object has no attribute 'dtype'"), a
    TypeError ("No matching signature found"), or pandas' "Lengths must match"."""
    with pytest.raises(ConfigError) as info:
        call(results())
    assert str(info.value) == says
    plt.close("all")


@pytest.mark.parametrize(
    ("fig", "path", "dpi", "says"),
    [
        (None, "f.png", None, r"fig: expected a matplotlib Figure, got None"),
        ("axes", "f.png", None, r"got Axes; pass its \.figure"),
        ("fig", None, None, r"path=None: expected a path"),
        ("fig", "f.png", 0, r"dpi=0: expected a number of dots per inch"),
        ("fig", "f.png", -1, r"dpi=-1: expected"),
        ("fig", "f.png", float("nan"), r"dpi=nan: expected"),
        ("fig", "f.png", "100", r"dpi='100': expected"),
        ("fig", "f.png", 1e6, r"dpi=1000000.0: expected .* at most 2400"),
        ("fig", "f.png", True, r"dpi=True: expected"),
    ],
)
def test_save_names_a_wrong_argument(tmp_path, fig, path, dpi, says):
    """Before: AttributeError, TypeError, ValueError or MemoryError from matplotlib."""
    f = plt.figure()
    f.add_subplot().plot([0, 1])
    given = {"fig": f, "axes": f.axes[0]}.get(fig) if isinstance(fig, str) else fig
    out = tmp_path / path if isinstance(path, str) else path
    with pytest.raises(ConfigError, match=says) as info:
        save(given, out, dpi=dpi)
    assert "\n" not in str(info.value)
    plt.close("all")


def test_save_takes_a_sane_dpi_and_figure_format_names_a_bad_path(tmp_path):
    from simsched.plotting.figures import figure_format

    f = plt.figure()
    assert save(f, tmp_path / "f.png", dpi=50).exists()
    for bad in (None, 5):
        with pytest.raises(ConfigError, match=rf"path={bad}: expected a path"):
            figure_format(bad)


@pytest.mark.parametrize(
    "call",
    [
        lambda df: line_plot(df, "cores", "speedup"),
        lambda df: aggregate(df, "cores", "speedup", "scheduler"),
        lambda df: normalised_time(df),
        lambda df: sweep_figure(df, "cores", "speedup", "scheduler"),
        lambda df: figure_speedup_misses(df, ["mergesort"]),
    ],
)
def test_a_table_whose_columns_have_levels_is_refused(call):
    """A pivot's or a groupby().agg's table (a MultiIndex of columns) failed inside pandas:
    KeyError ['speedup'], MergeError, "other must be a MultiIndex"."""
    df = results()
    df.columns = pd.MultiIndex.from_tuples([(c, "") for c in df.columns])
    with pytest.raises(ConfigError, match=r"^df: its columns have 2 levels \(a pandas MultiIndex"):
        call(df)


@pytest.mark.parametrize(
    ("column", "call"),
    [
        ("scheduler", lambda df: line_plot(df, "cores", "speedup")),
        ("cores", lambda df: bar_plot_of(df)),
        ("scheduler", lambda df: normalised_time(df)),
        ("machine", lambda df: normalised_time(df)),
        ("cores", lambda df: sweep_figure(df, "cores", "speedup", "scheduler")),
        ("scheduler", lambda df: sweep_figure(df, "cores", "speedup", "scheduler")),
    ],
)
def test_a_column_of_lists_is_named(column, call):
    """A column holding lists (a record's nested field read back as Python lists) failed
    inside pandas with "unhashable type: 'list'"."""
    df = results()
    df[column] = [[v] for v in df[column]]
    with pytest.raises(ConfigError, match=rf"^column '{column}' holds values of type list"):
        call(df)
    plt.close("all")


def bar_plot_of(df: pd.DataFrame) -> object:
    from simsched.plotting.figures import bar_plot

    return bar_plot(df, "cores", "speedup")


def test_a_label_column_of_lists_outside_the_figure_is_no_failure():
    """The check of labels a mark averages over (machine here) failed on a column of
    lists that the figure does not draw."""
    df = results()
    df["machine"] = [[v] for v in df["machine"]]
    sweep_figure(df, "cores", "speedup", "scheduler", warn=lambda m: None)
    plt.close("all")


def test_rows_a_figure_cannot_place_are_left_out_with_a_warning():
    """Rows without a value of x, y or hue were dropped without a word (a mean over some
    seeds read as a mean over all); now a warning says how many and of which column."""
    df = results()
    ok = df["status"] == "ok"
    df.loc[df.index[ok][:2], "speedup"] = float("nan")
    df.loc[df.index[ok][2], "cores"] = None
    with pytest.warns(UserWarning) as told:
        agg = aggregate(df, "cores", "speedup", "scheduler")
    assert [str(w.message) for w in told] == [
        f"3 of {ok.sum()} rows left out of the figure: no value of cores (1), speedup (2)"
    ]
    assert told[0].filename == __file__  # the caller's line, not simsched's
    assert agg["n"].sum() == ok.sum() - 3
    with pytest.warns(UserWarning, match="3 of .* rows left out of the figure") as told:
        line_plot(df, "cores", "speedup")
    assert told[0].filename == __file__
    said: list[str] = []
    sweep_figure(df, "cores", "speedup", "scheduler", col="workload", warn=said.append)
    left_out = [m for m in said if "left out" in m]
    assert left_out == [
        f"3 of {ok.sum()} rows left out of the figure: no value of cores (1), speedup (2)"
    ]  # once for the figure, not once per panel
    plt.close("all")


def test_normalised_time_says_which_rows_it_leaves_out():
    """Rows at a configuration without a successful baseline run, and rows without a
    makespan, vanished from the table (and from normalised_time_bars) without a word."""
    df = results()
    ok = df["status"] == "ok"
    gone = ok & (df["machine"] == "itrs-scaling-4") & (df["scheduler"] == "ws")
    df.loc[gone, "status"] = "error"  # the baseline failed at itrs-scaling-4
    df.loc[df.index[ok & (df["scheduler"] == "pdf")][0], "makespan_cycles"] = float("nan")
    with pytest.warns(UserWarning) as told:
        out = normalised_time(df)
    assert [str(w.message) for w in told] == [
        f"normalised time: 3 of {(ok & ~gone).sum()} rows left out: 1 without "
        "makespan_cycles; 2 at a workload and machine with no successful run of "
        "scheduler='ws' (e.g. workload mergesort, machine itrs-scaling-4)"
    ]
    assert told[0].filename == __file__
    assert len(out) == (ok & ~gone).sum() - 3 and out["norm_time"].notna().all()
    with pytest.warns(UserWarning, match="normalised time: 3 of"):
        normalised_time_bars(df)
    plt.close("all")


def test_the_style_leaves_interactive_as_the_figures_inside_set_it():
    """A notebook's inline backend turns ``interactive`` on when its first figure is made;
    made inside ``style()``, leaving the context turned it off again, and no later figure
    of the kernel was displayed."""
    from simsched.plotting.figures import style

    try:
        matplotlib.interactive(False)
        with style():
            matplotlib.interactive(True)  # as the inline backend does on its first figure
        assert matplotlib.is_interactive()
        with style():
            pass
        assert matplotlib.is_interactive()
        matplotlib.interactive(False)
        with style():
            pass
        assert not matplotlib.is_interactive()
    finally:
        matplotlib.interactive(False)


def test_every_styled_figure_of_a_notebook_is_displayed():
    """The same in a real kernel: the second of two styled figures, and a plain one after
    them, had no image output."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [
        "import pandas as pd\nfrom simsched import plotting\n"
        "df = pd.DataFrame({'cores': [1, 2, 1, 2], 'speedup': [1, 1.8, 1, 1.5], "
        "'scheduler': ['ws', 'ws', 'pdf', 'pdf'], 'status': ['ok'] * 4, 'workload': ['a'] * 4})",
        "fig = plotting.sweep_figure(df, x='cores', y='speedup')",
        "fig = plotting.sweep_figure(df, x='cores', y='speedup')",
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    shown = [any("image/png" in o.get("data", {}) for o in c.outputs) for c in nb.cells]
    assert shown == [False, True, True, True]
