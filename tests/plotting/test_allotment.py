"""The allotment figure of a multi-job record."""

from __future__ import annotations

import numpy as np

from simsched.plotting.allotment import plot_allotment


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
