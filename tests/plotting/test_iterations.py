"""``simsched plot iterations``: per-iteration time and CF roots ([LAWS15] Fig. 8)."""

from __future__ import annotations

import json
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from simsched.cli.plot import register  # noqa: E402
from simsched.errors import ConfigError  # noqa: E402
from simsched.plotting.iterations import load_records, plot_iterations  # noqa: E402

LAWS = {
    "status": "ok",
    "scheduler": "laws",
    "seed": 0,
    "iteration_cycles": "[100,80,70,75]",
    "packing": json.dumps(
        [
            {"iteration": 0, "move": "profile", "cf_roots": 0, "cf_root_level": 0.0},
            {"iteration": 1, "move": "initial", "cf_roots": 4, "cf_root_level": 3.0},
            {"iteration": 2, "move": "smaller", "cf_roots": 8, "cf_root_level": 4.0},
            {"iteration": 3, "move": "final", "cf_roots": 8, "cf_root_level": 4.0},
        ]
    ),
}


def test_plot_has_time_and_roots_panels():
    fig = plot_iterations([LAWS, {"scheduler": "ws", "seed": 0}])
    ax, ax2 = fig.axes
    assert list(ax.lines[0].get_ydata()) == [100, 80, 70, 75]
    assert list(ax2.lines[0].get_ydata()) == [0, 4, 8, 8]


def test_any_policy_draws_the_periods_of_its_iteration_ends():
    """Every run keeps its iterations' ends: WS's line is their periods, and so is LAWS's
    when it has them (one measure for every line), its own iteration_cycles otherwise."""
    ws = {"scheduler": "ws", "seed": 1, "iteration_ends": "[100,180,250]"}
    laws = {**LAWS, "iteration_ends": "[90,170,240,315]"}
    fig = plot_iterations([ws, laws])
    assert [list(line.get_ydata()) for line in fig.axes[0].lines] == [
        [100, 80, 70],
        [90, 80, 70, 75],
    ]


def test_a_sampled_runs_left_out_iterations_are_a_gap(tmp_path):
    """Before, ``load_records`` refused a sampled LAWS record written without iteration
    ends: the -1 of the iterations it left out were "not a list of cycle counts"."""
    sampled = {**LAWS, "iteration_cycles": "[100,80,70,-1,-1]"}
    (tmp_path / "s.json").write_text(json.dumps(sampled))
    (rec,) = load_records([tmp_path / "s.json"])
    y = list(plot_iterations([rec]).axes[0].lines[0].get_ydata())
    assert y[:3] == [100, 80, 70] and all(v != v for v in y[3:])  # NaN


@pytest.mark.parametrize("ends", ["[100,90]", "[-5]", '["a"]', "{}"])
def test_damaged_iteration_ends_are_refused(ends):
    with pytest.raises(ConfigError, match="records\\[0\\]: field 'iteration_ends' is not a list"):
        plot_iterations([{"scheduler": "ws", "iteration_ends": ends}])


def test_no_iterations_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="iteration_cycles"):
        plot_iterations([{"scheduler": "ws"}])
    with pytest.raises(ConfigError, match=r"missing.json: no such file \(a `simsched run"):
        load_records([tmp_path / "missing.json"])


def test_a_failed_or_interrupted_run_says_so(tmp_path):
    """Before: "no record has iteration_cycles", as if the run had succeeded without
    iterations."""
    failed = {**LAWS, "status": "error", "error": "ConfigError: trace t.sst: truncated\nmore"}
    (tmp_path / "failed.json").write_text(json.dumps(failed))
    with pytest.raises(ConfigError) as info:
        load_records([tmp_path / "failed.json"])
    assert str(info.value) == (
        f"{tmp_path / 'failed.json'}: the run failed (ConfigError: trace t.sst: truncated)"
    )
    (tmp_path / "int.json").write_text(json.dumps({**LAWS, "status": "interrupted"}))
    with pytest.raises(ConfigError, match="int.json: the run was interrupted .* no iteration"):
        load_records([tmp_path / "int.json"])


def test_cli(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "result.json").write_text(json.dumps(LAWS))
    (tmp_path / "ws.json").write_text(json.dumps({"status": "ok", "scheduler": "ws"}))
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    out = tmp_path / "it.png"
    res = runner.invoke(app, ["plot", "iterations", str(tmp_path / "r"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 0
    res = runner.invoke(app, ["plot", "iterations", str(tmp_path / "ws.json"), "-o", str(out)])
    assert res.exit_code != 0


@pytest.mark.parametrize("title", ["$$", "$_$", r"p$\frac{$"])
def test_title_is_drawn_literally(tmp_path, title):
    """Used to fail with matplotlib's mathtext ParseException."""
    fig = plot_iterations([LAWS], title=title)
    fig.savefig(tmp_path / "t.png")
    assert fig.axes[0].get_title().replace("\\$", "$") == title


def test_text_that_is_not_utf8_is_drawn_written_out(tmp_path):
    """A byte of --title that is not UTF-8, or a \\udcff in a record's scheduler, ended
    in matplotlib's TypeError and its traceback."""
    fig = plot_iterations([{**LAWS, "scheduler": "la\udcffws\ud800"}], title="a\udcffb")
    fig.savefig(tmp_path / "t.png")
    assert fig.axes[0].get_title() == "a\\xffb"
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("la\\udcffws\\ud800" in label for label in labels), labels


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("iteration_cycles", '[1, "a"]', "'iteration_cycles' is not a list of cycle counts"),
        ("iteration_cycles", "zz", "field 'iteration_cycles' is not JSON"),
        ("iteration_cycles", "[-2, 2]", "'iteration_cycles' is not a list of cycle counts"),
        ("iteration_cycles", {"a": 1}, "'iteration_cycles' is not a list of cycle counts"),
        ("packing", '[{"cf_roots": "x", "iteration": 1}]', "'packing' is not a list of"),
        ("packing", "[3]", "'packing' is not a list of"),
    ],
)
def test_damaged_fields_name_the_file(tmp_path, field, value, says):
    """A damaged record's iteration times were drawn as strings, or failed inside
    matplotlib, and a field that was not JSON was reported without its file."""
    run = tmp_path / "run"
    run.mkdir()
    rec = {"status": "ok", "scheduler": "laws", "seed": 0, "iteration_cycles": [5, 6], field: value}
    (run / "result.json").write_text(json.dumps(rec))
    with pytest.raises(
        ConfigError, match=re.escape(f"{run / 'result.json'}: ") + ".*" + re.escape(says)
    ):
        load_records([run])


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: plot_iterations(3), "records=3: expected result records"),
        (lambda: plot_iterations(["x"]), "records[0]='x': expected a result record"),
        (lambda: plot_iterations([], title=b"t"), "title=b't': expected a text"),
        (lambda: load_records(None), "paths=None: expected result folders"),
        (lambda: load_records([1]), "path=1: expected a path"),
    ],
)
def test_a_wrong_argument_is_named(call, says):
    """Before: "'int' object is not iterable", "'str' object has no attribute 'get'",
    "expected str, bytes or os.PathLike object, not int"."""
    with pytest.raises(ConfigError) as info:
        call()
    assert says in str(info.value)


def test_one_path_is_one_record_not_its_letters(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_records(str(tmp_path / "nosuch"))
    assert str(info.value).startswith(str(tmp_path / "nosuch"))


@pytest.mark.parametrize(
    ("record", "says"),
    [
        ({"iteration_cycles": [1, "a"]}, "field 'iteration_cycles' is not a list of cycle counts"),
        ({"iteration_cycles": [-2, 2]}, "field 'iteration_cycles' is not a list of cycle counts"),
        ({"iteration_cycles": 5}, "field 'iteration_cycles' is not a list of cycle counts"),
        ({"iteration_cycles": "zz"}, "field 'iteration_cycles' is not JSON: 'zz'"),
        (
            {"iteration_cycles": [1, 2], "packing": [1, 2]},
            "field 'packing' is not a list of {iteration, cf_roots} entries",
        ),
    ],
)
def test_records_given_from_python_are_checked_as_loaded_ones(tmp_path, record, says):
    """load_records checked the fields, plot_iterations did not: a text time was drawn on
    a text axis, a negative one below zero, and 5 or a packing of numbers failed with a
    TypeError or an AttributeError.  One check, naming the file or the argument."""
    with pytest.raises(ConfigError) as info:
        plot_iterations([LAWS, {"status": "ok", **record}])
    assert str(info.value) == f"records[1]: {says}"
    (tmp_path / "result.json").write_text(json.dumps({"status": "ok", **record}))
    with pytest.raises(ConfigError) as info:
        load_records([tmp_path])
    assert str(info.value) == f"{tmp_path / 'result.json'}: {says}"


def test_packing_entries_without_roots_are_not_drawn():
    """An entry without cf_roots passed the check and failed the drawing (KeyError)."""
    rec = {**LAWS, "packing": [{"iteration": 0, "cf_roots": 2}, {"iteration": 1}]}
    _, ax2 = plot_iterations([rec]).axes
    assert list(ax2.lines[0].get_ydata()) == [2]
