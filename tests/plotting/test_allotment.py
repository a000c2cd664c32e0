"""The allotment figure of a multi-job record: desires end with their job; the title names
the job schedulers and says when desires are cut off above the axis."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from simsched.cli import main  # noqa: E402
from simsched.plotting.allotment import load_jobs_record, plot_allotment  # noqa: E402


def _record(desire_after_finish: int) -> dict:
    return {
        "kind": "jobs",
        "cores": 4,
        "makespan_cycles": 300,
        "machine": "m",
        "controller": "deq",
        "jobs": [{"name": "a", "finish": 100}, {"name": "b", "finish": 300}],
        "allotment": {
            "cycles": [0, 100, 200, 300],
            "cores": [[2, 2], [0, 4], [0, 4], [0, 0]],
            "desire": [[2, 2], [desire_after_finish, 4], [desire_after_finish, 4], [0, 0]],
        },
    }


def _desire_line(fig, name):
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_label() == f"{name} desire"]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def test_desire_line_stops_where_the_job_ends():
    # Also for records that kept the last desire of a finished job.
    for kept in (0, 2):
        x, y = _desire_line(plot_allotment(_record(kept)), "a")
        assert np.all(np.isnan(y[x >= 100])) and y[0] == 2
        x, y = _desire_line(plot_allotment(_record(kept)), "b")
        assert not np.any(np.isnan(y[x < 300]))


def test_jobs_without_desires_are_stacked_though_finished_ones_read_0():
    """A record gives a finished job desire 0 and -1 where none was reported: a job set
    of WS jobs (no desires) is drawn stacked, in colours no two jobs share."""
    n = 10
    rec = {
        "kind": "jobs",
        "cores": 4 * n,
        "makespan_cycles": 400,
        "machine": "m",
        "controller": "equi",
        "jobs": [{"name": f"j{k}", "finish": 100 + 20 * k} for k in range(n)],
        "allotment": {
            "cycles": [0, 100, 300],
            "cores": [[4] * n, [0] + [4] * (n - 1), [0] * n],
            "desire": [[-1] * n, [0] + [-1] * (n - 1), [0] * n],
        },
    }
    ax = plot_allotment(rec).axes[0]
    assert not ax.lines  # no step lines: stacked areas
    fills = ax.collections
    assert len(fills) == n
    colours = {tuple(np.round(f.get_facecolor()[0], 3)) for f in fills}
    assert len(colours) == n


def _titled(desire: list[list[int]], schedulers: tuple[str, str]) -> dict:
    return {
        "kind": "jobs",
        "status": "ok",
        "machine": "test-1x4",
        "controller": "deq",
        "cores": 4,
        "makespan_cycles": 300,
        "jobs": [{"name": f"j{k}", "scheduler": s} for k, s in enumerate(schedulers)],
        "allotment": {
            "cycles": [0, 100, 200],
            "cores": [[2, 2], [1, 3], [0, 4]],
            "desire": desire,
        },
    }


def test_title_names_the_schedulers_and_the_clipped_desires():
    rec = _titled([[2, 9], [1, 6], [-1, 4]], ("saws", "asteal"))
    ax = plot_allotment(rec).axes[0]
    title = ax.get_title()
    assert "2 jobs under asteal/saws on test-1x4, controller deq" in title
    assert "desires above 4 cores are cut off" in title
    assert ax.get_ylim()[1] == pytest.approx(4.5)
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert max(np.nanmax(line.get_ydata()) for line in dashed) == 9  # drawn, only out of view


def test_title_of_desires_within_the_axis_has_no_note_and_one_scheduler_once():
    rec = _titled([[2, 2], [1, 3], [-1, 4]], ("saws", "saws"))
    title = plot_allotment(rec).axes[0].get_title()
    assert title == "2 jobs under saws on test-1x4, controller deq"
    no_desire = _titled([[-1, -1]] * 3, ("ws", "ws"))
    assert "cut off" not in plot_allotment(no_desire).axes[0].get_title()


def test_cli_draws_the_figure(tmp_path, capsys):
    (tmp_path / "result.json").write_text(json.dumps(_titled([[2, 9]] * 3, ("saws", "ws"))))
    assert load_jobs_record(tmp_path)["controller"] == "deq"
    with pytest.raises(SystemExit) as info:
        main(["plot", "allotment", str(tmp_path), "-o", str(tmp_path / "a.png")])
    assert info.value.code == 0
    assert (tmp_path / "a.png").stat().st_size > 0


def test_job_names_are_drawn_literally(tmp_path):
    """A job named after a trace ``p$\\frac{$.sst`` used to stop the figure (mathtext)."""
    rec = _titled([[2, 9]] * 3, ("saws", "ws"))
    rec["jobs"][0]["name"] = r"p$\frac{$#0"
    fig = plot_allotment(rec)
    fig.savefig(tmp_path / "a.png")
    assert r"p\$\frac{\$#0" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


class _JobsResultLike:
    def __init__(self, record: dict) -> None:
        self.record = record


@pytest.mark.parametrize(
    ("rec", "says"),
    [
        ({"kind": "run", "status": "ok", "makespan_cycles": 3}, r"the record has kind 'run'"),
        ({**_record(0), "status": "error", "error": "boom"}, r"status 'error'"),
        ({}, r"the record has no 'kind'"),
        (None, r"got None"),
        ("out/result.json", r"rec='out/result.json': a path; load it with load_jobs_record"),
        (_JobsResultLike(_record(0)), r"got _JobsResultLike; pass its \.record"),
        ({"kind": "jobs", "status": "ok", "jobs": []}, r"no 'allotment' series"),
        ({**_record(0), "jobs": None}, r"'jobs' is not a list of named jobs"),
        # a record changed in Python failed inside numpy or matplotlib
        (
            {**_record(0), "allotment": {**_record(0)["allotment"], "cycles": "abc"}},
            r"^rec: field 'allotment' is not an allotment series",
        ),
        (
            {**_record(0), "allotment": {**_record(0)["allotment"], "cores": None}},
            r"^rec: field 'allotment' is not an allotment series",
        ),
        ({**_record(0), "cores": "x"}, r"^rec: field 'cores' is not an integer from 1"),
    ],
)
def test_refuses_what_is_not_a_multi_job_record(rec, says):
    from simsched.errors import ConfigError

    with pytest.raises(ConfigError, match=says) as e:
        plot_allotment(rec)
    assert "\n" not in str(e.value)


def test_allotment_cycles_that_go_back_are_refused():
    """A step plot of them drew one job's cores over another's, without a word."""
    from simsched.errors import ConfigError

    rec = _titled([[2, 2]] * 3, ("ws", "ws"))
    rec["allotment"] = {**rec["allotment"], "cycles": [0, 200, 100]}
    with pytest.raises(ConfigError, match=r"^rec: field 'allotment': cycles go back at entry 2 "):
        plot_allotment(rec)


def test_an_empty_allotment_series_is_nothing_to_draw(tmp_path, capsys):
    """An IndexError inside the figure ("too many indices for array"), from Python and
    from `plot allotment`: one check names the record or its file."""
    from simsched.errors import ConfigError

    empty = {"cycles": [], "cores": [], "desire": [], "leaving": []}
    rec = {**_titled([[2, 2]] * 3, ("ws", "ws")), "allotment": empty}
    with pytest.raises(ConfigError) as e:
        plot_allotment(rec)
    assert str(e.value) == (
        "rec: field 'allotment' is empty (no reallocation recorded): nothing to draw"
    )
    (tmp_path / "result.json").write_text(json.dumps(rec))
    with pytest.raises(SystemExit) as info:
        main(["plot", "allotment", str(tmp_path), "-o", str(tmp_path / "a.png")])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        f"simsched: error: {tmp_path / 'result.json'}: field 'allotment' is empty (no "
        "reallocation recorded): nothing to draw\n"
    )
    assert not (tmp_path / "a.png").exists()
