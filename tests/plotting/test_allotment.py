"""``simsched plot allotment``: the title names the job schedulers and says when desires are
cut off above the axis (issue 25, item 4)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from simsched.cli import main  # noqa: E402
from simsched.plotting.allotment import load_jobs_record, plot_allotment  # noqa: E402


def _record(desire: list[list[int]], schedulers: tuple[str, str]) -> dict:
    return {
        "kind": "jobs",
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
    rec = _record([[2, 9], [1, 6], [-1, 4]], ("saws", "asteal"))
    ax = plot_allotment(rec).axes[0]
    title = ax.get_title()
    assert "2 jobs under asteal/saws on test-1x4, controller deq" in title
    assert "desires above 4 cores are cut off" in title
    assert ax.get_ylim()[1] == pytest.approx(4.5)
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert max(max(line.get_ydata()) for line in dashed) == 9  # drawn, only out of view


def test_title_of_desires_within_the_axis_has_no_note_and_one_scheduler_once():
    rec = _record([[2, 2], [1, 3], [-1, 4]], ("saws", "saws"))
    title = plot_allotment(rec).axes[0].get_title()
    assert title == "2 jobs under saws on test-1x4, controller deq"
    no_desire = _record([[-1, -1]] * 3, ("ws", "ws"))
    assert "cut off" not in plot_allotment(no_desire).axes[0].get_title()


def test_cli_draws_the_figure(tmp_path, capsys):
    (tmp_path / "result.json").write_text(json.dumps(_record([[2, 9]] * 3, ("saws", "ws"))))
    assert load_jobs_record(tmp_path)["controller"] == "deq"
    with pytest.raises(SystemExit) as info:
        main(["plot", "allotment", str(tmp_path), "-o", str(tmp_path / "a.png")])
    assert info.value.code == 0
    assert (tmp_path / "a.png").stat().st_size > 0
