"""Allotment figure of a multi-job run: cores held by each job over time.

Without desires the allotments are stacked (each job's share and the idle cores at a
glance); when the job schedulers report desires, each job gets a solid step line for its
allotment and a dashed one for its desire.

It reads the ``allotment`` series of a multi-job result record (docs/results.md): one entry
per reallocation, controller quantum or job finish, giving every job's cores (and desire, when its
scheduler reports one).  The series is a step function: an entry holds until the next.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from simsched.errors import ConfigError, shown
from simsched.plotting.figures import literal, style
from simsched.plotting.runfolder import (
    check_finished,
    check_record_fields,
    read_record,
    result_file,
)


def load_jobs_record(path: str | Path) -> dict[str, Any]:
    """The multi-job result record in ``path`` (a ``run --out`` folder or its result.json),
    to draw: a record whose allotment series is empty is refused."""
    p = result_file(path)
    rec = read_record(path)  # checks the types of jobs and allotment
    if rec.get("kind") == "jobs":
        lost = "no allotment was recorded (run it again to draw one)"
        check_finished(p, rec, lost, "the multi-job run")
    if rec.get("kind") != "jobs" or "allotment" not in rec:
        raise ConfigError(f"{p}: not the record of a multi-job run (simsched run --jobs)")
    _check_drawable(p, rec)
    return rec


def _check_drawable(where: str | Path, rec: dict[str, Any]) -> None:
    """Refuse an allotment series of no entry, in one line naming ``where`` (the record's
    file, or the argument): the figure failed inside numpy ("too many indices")."""
    cycles = rec["allotment"]["cycles"]
    if not len(cycles):
        raise ConfigError(
            f"{where}: field 'allotment' is empty (no reallocation recorded): nothing to draw"
        )
    back = next((i for i in range(1, len(cycles)) if cycles[i] < cycles[i - 1]), None)
    if back is not None:
        # a step plot of times that go back draws one job's cores over another's
        raise ConfigError(
            f"{where}: field 'allotment': cycles go back at entry {back} "
            f"({cycles[back - 1]} then {cycles[back]})"
        )


def default_title(rec: dict[str, Any], clipped_above: int | None = None) -> str:
    """The figure's title: jobs, job scheduler(s), machine and controller, and a second line
    when desires above the axis (``clipped_above`` cores) are cut off."""
    jobs = rec.get("jobs", [])
    schedulers = sorted({str(j.get("scheduler", "")) for j in jobs if j.get("scheduler")})
    under = f" under {'/'.join(schedulers)}" if schedulers else ""
    head = (
        f"{len(jobs)} jobs{under} on {rec.get('machine', '')}, "
        f"controller {rec.get('controller', '')}"
    )
    if clipped_above is None:
        return head
    return f"{head}\n(desires above {clipped_above} cores are cut off at the top of the axis)"


_TAKES = "a multi-job run's record (JobsResult.record or load_jobs_record(path))"


def _check_jobs_record(rec: Any) -> dict[str, Any]:
    """``rec`` if it is the record of a finished multi-job run, else a one-line
    :class:`ConfigError` that says what the figure takes (a single run's record, a failed
    one, a path or the result object itself failed with a ``KeyError`` or ``TypeError``)."""
    if isinstance(rec, str | os.PathLike):
        raise ConfigError(f"rec={shown(rec)}: a path; load it with load_jobs_record(path)")
    if not isinstance(rec, Mapping):
        got = "None" if rec is None else type(rec).__name__
        hint = "; pass its .record" if isinstance(getattr(rec, "record", None), Mapping) else ""
        raise ConfigError(f"rec: expected {_TAKES}, got {got}{hint}")
    if rec.get("kind") != "jobs":
        kind = f"kind {shown(rec.get('kind'))}" if "kind" in rec else "no 'kind'"
        raise ConfigError(f"rec: not {_TAKES}: the record has {kind}, not 'jobs'")
    status = rec.get("status", "ok")
    if status != "ok":
        raise ConfigError(
            f"rec: the multi-job run did not end well (status {shown(status)}): "
            "no allotment to draw"
        )
    a = rec.get("allotment")
    if not isinstance(a, Mapping) or "cycles" not in a or "cores" not in a:
        raise ConfigError(f"rec: not {_TAKES}: it has no 'allotment' series")
    jobs = rec.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, Mapping) and "name" in j for j in jobs):
        raise ConfigError(f"rec: not {_TAKES}: its 'jobs' is not a list of named jobs")
    # the checks a record read from a file gets (a record changed in Python failed inside
    # numpy or matplotlib: "could not convert string to float", "too many indices")
    check_record_fields("rec", dict(rec))
    _check_drawable("rec", dict(rec))
    return dict(rec)


def job_colors(n: int) -> list[Any]:
    """A colour per job, no two alike up to 20 jobs: the style's cycle (Okabe-Ito, eight
    colours that colour-blind readers tell apart) while it has enough, else matplotlib's
    ``tab20`` (repeating after 20)."""
    cycle = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
    if n <= len(cycle):
        return cycle[:n]
    tab20 = matplotlib.colormaps["tab20"]
    return [tab20(k % 20) for k in range(n)]


def plot_allotment(rec: dict[str, Any], *, title: str | None = None) -> Figure:
    """Step plot of every job's allotment (solid) and desire (dashed) over time.

    The y axis ends at the machine's cores; a desire above them (a job may ask for more
    cores than exist) is cut off there, and the default title says so.

    Parameters
    ----------
    rec
        A multi-job run's result record (``JobsResult.record`` or
        :func:`load_jobs_record`); anything else is a :class:`ConfigError`.
    title
        Figure title (default: :func:`default_title`: jobs, job schedulers, machine,
        controller, and whether desires are cut off).

    Returns
    -------
    matplotlib.figure.Figure
    """
    rec = _check_jobs_record(rec)
    a = rec["allotment"]
    t = np.asarray(a["cycles"], dtype=float)
    cores = np.asarray(a["cores"], dtype=float)
    # Records without desires (schedulers that report none) draw the stacked shares.
    desire = np.asarray(a["desire"], dtype=float) if "desire" in a else np.full(cores.shape, -1.0)
    end = float(rec.get("makespan_cycles", t[-1] if t.size else 0))
    names = [literal(j["name"]) for j in rec["jobs"]]
    # A job's desire while it runs: the record gives a finished job desire 0 (older
    # records kept its last one), which is no desire reported.
    live = np.zeros(desire.shape, dtype=bool)
    for k, job in enumerate(rec["jobs"]):
        finish = job.get("finish", -1)
        live[:, k] = (desire[:, k] >= 0) & ((t < finish) if finish >= 0 else True)
    with style():
        colors = job_colors(len(names))
        fig = Figure(figsize=(8, 4.2))
        ax = fig.add_subplot()
        has_desire = bool(np.any(live))
        if t.size and not has_desire:
            # Stacked: each job's share and the machine's idle cores at a glance.
            tt = np.append(t, max(end, t[-1]))
            base = np.zeros(tt.size)
            for k, name in enumerate(names):
                y = base + np.append(cores[:, k], cores[-1, k])
                ax.fill_between(
                    tt, base, y, step="post", label=name, linewidth=0.3, color=colors[k]
                )
                base = y
        elif t.size:
            tt = np.append(t, max(end, t[-1]))
            for k, name in enumerate(names):
                y = np.append(cores[:, k], cores[-1, k])
                ax.step(tt, y, where="post", label=name, linewidth=1.6, color=colors[k])
                if np.any(live[:, k]):
                    # dashed, and only while the job runs
                    d = np.where(live[:, k], desire[:, k], np.nan)
                    ax.step(
                        tt,
                        np.append(d, d[-1]),
                        where="post",
                        linestyle="--",
                        color=colors[k],
                        linewidth=1.0,
                        label=f"{name} desire",
                    )
        ax.set_xlabel("cycle")
        ax.set_ylabel("cores")
        machine_cores = int(rec.get("cores") or 0)
        ax.set_ylim(bottom=0, top=machine_cores + 0.5 if machine_cores else None)
        ax.set_xlim(0, end or None)
        clipped = bool(machine_cores and has_desire and np.max(desire[live]) > machine_cores + 0.5)
        ax.set_title(
            literal(title or default_title(rec, machine_cores if clipped else None)),
            fontsize="medium",
        )
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        fig.tight_layout()
    return fig
