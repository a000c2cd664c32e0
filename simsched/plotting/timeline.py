"""Per-core strand timeline of one run (a Gantt chart).

One row per core; every strand is a bar from its start to its end cycle.  Bars are
coloured by *subtree* (the strand's ancestor frame at one level of the DAG — by default
the shallowest level with at least as many frames as cores — so strands of one subtree
share a colour and strands above that level are grey) or by the socket of the core.  Drawn with ``broken_barh`` per core and colour, so a run of
hundreds of thousands of strands still draws in seconds.

Input is what :func:`simsched.run` stores in ``timeline.npz`` next to ``result.json``
(per strand: core, start, end, frame; the socket of every core), loaded with
``allow_pickle=False``.  The subtree of a frame needs the frames' parents and levels; they
are read from the trace when it is given, else the frame itself is the colour key.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from simsched.errors import ConfigError, shown
from simsched.params import check_int
from simsched.plotting.runfolder import (
    TIMELINE_FILE,
    check_finished,
    check_timeline,
    read_record,
    read_timeline,
    replayed_only,
    result_file,
    run_path,
)

#: What a timeline's strands may be coloured by (``plot_timeline``'s ``color_by``).
COLOR_BY = ("subtree", "socket", "job")


def load_timeline(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a run's timeline and record from a result folder or its ``result.json``.

    Parameters
    ----------
    path
        A folder written by ``simsched run --out`` or the ``result.json`` inside it (the
        ``timeline.npz`` beside it is read).

    Returns
    -------
    (arrays, record)
        The timeline arrays and the result record, checked by
        :func:`~simsched.plotting.runfolder.read_timeline` and
        :func:`~simsched.plotting.runfolder.read_record`.

    Raises
    ------
    ConfigError
        An empty path, no such file or folder, no result or timeline there, a file that is
        no run's record, a failed or interrupted run, or a damaged file.
    """
    p = run_path(path)
    folder = p if p.is_dir() else p.parent
    rec_path = result_file(p)
    # says what is wrong with a path that is no record (a sweep's folder, say)
    record = read_record(p)
    check_finished(rec_path, record, "no timeline to draw")
    arrays = read_timeline(folder / TIMELINE_FILE, record)
    return arrays, record


def subtree_of_frames(
    parent: np.ndarray, level: np.ndarray, at_level: int | None = None, min_groups: int = 1
) -> np.ndarray:
    """Ancestor at level ``at_level`` of every frame (-1 for frames above that level).

    With ``at_level`` None the level is the shallowest one with at least ``min_groups``
    frames (e.g. the number of cores), so that a program whose main spawns a single child
    is still coloured by meaningful subtrees.

    Raises
    ------
    ConfigError
        ``parent`` and ``level`` are not a trace's frame tree (``Trace.frames.parent`` and
        ``.level``; a trace's path is refused as such), or ``at_level`` or ``min_groups``
        is not a whole number.
    """
    parent, level = _frame_tree(parent, level)
    if at_level is not None:
        at_level = check_int("at_level", at_level)
    min_groups = check_int("min_groups", min_groups)
    if at_level is None:
        counts = np.bincount(level) if level.size else np.zeros(1, np.int64)
        ok = np.flatnonzero(counts >= min_groups)
        at_level = int(ok[0]) if ok.size else int(len(counts) - 1)
        at_level = max(at_level, 1)
    out = np.full(len(parent), -1, dtype=np.int64)
    for f in range(len(parent)):  # parents precede children
        if level[f] == at_level:
            out[f] = f
        elif level[f] > at_level:
            out[f] = out[parent[f]]
    return out


def _frame_tree(parent: Any, level: Any) -> tuple[np.ndarray, np.ndarray]:
    """``parent`` and ``level`` as integer arrays, if they are a trace's frame tree (one
    entry per frame, each parent before its children, levels from 0), else a one-line
    :class:`ConfigError`: a path, a number or a broken tree failed inside numpy."""
    if isinstance(parent, str | PathLike):
        raise ConfigError(
            f"parent={shown(parent)}: a path; give the trace's frame tree, "
            "open_trace(path).frames.parent and .level"
        )
    arrays = []
    for name, given in (("parent", parent), ("level", level)):
        try:
            a = np.asarray(given)
        except (TypeError, ValueError):  # a ragged list
            a = np.zeros((0, 0))
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise ConfigError(
                f"{name}={shown(given)}: expected an integer array, one entry per frame "
                f"(Trace.frames.{name})"
            )
        arrays.append(a.astype(np.int64))
    parent, level = arrays
    if len(level) != len(parent):
        raise ConfigError(f"level: {len(level)} entries, but parent has {len(parent)} frames")
    ids = np.arange(len(parent))
    bad = np.flatnonzero(np.where(ids == 0, parent != -1, (parent < 0) | (parent >= ids)))
    if bad.size:
        f = int(bad[0])
        raise ConfigError(
            f"parent: frame {f} has parent {int(parent[f])}: not a tree rooted at frame 0 "
            "(each parent precedes its children)"
        )
    if len(level) and int(level.min()) < 0:
        raise ConfigError(f"level: frame {int(np.argmin(level))} has level {int(level.min())}")
    return parent, level


def _colour_key(ax: Any, entries: list[tuple[bool, int, Any]], color_by: str, has_subtree: bool):
    """A legend beside the bars: sockets, or subtrees (first 8) and the serial grey."""
    from matplotlib.patches import Patch

    handles = []
    coloured = [e for e in entries if not e[0]]
    if color_by in ("socket", "job"):
        noun = color_by
    else:
        noun = "subtree of frame" if has_subtree else "frame"
    if len(coloured) <= 8:
        for _, k, color in coloured:
            handles.append(Patch(facecolor=color, label=f"{noun} {k}"))
    else:  # too many to name: say what a colour means and how many there are
        what = {"job": "jobs", "socket": "sockets"}.get(color_by) or (
            "subtrees" if has_subtree else "frames"
        )
        label = f"{len(coloured)} {what}, one colour each (20 colours repeat)"
        handles.append(Patch(facecolor=coloured[0][2], label=label))
    if any(e[0] for e in entries):
        handles.append(Patch(facecolor="0.6", label="serial / start-up (above the subtrees)"))
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False
    )


def plot_timeline(
    arrays: dict[str, np.ndarray],
    *,
    color_by: str = "subtree",
    subtree: np.ndarray | None = None,
    title: str = "",
    ax: Any = None,
):
    """Draw per-core strand timelines.

    Parameters
    ----------
    arrays
        Timeline arrays (``core``, ``start``, ``end``, ``frame``, ``socket_of_core``).
    color_by
        ``"subtree"`` (ancestor frame; needs ``subtree``, else the frame itself),
        ``"socket"`` or ``"job"`` (a job-set run's ``job`` array).
    subtree
        Subtree (ancestor frame) of every frame (see :func:`subtree_of_frames`).
    title
        Figure title.
    ax
        Matplotlib axes to draw into (a new figure when None).

    Returns
    -------
    matplotlib.figure.Figure
        The strands a sampled run did not replay (its extrapolated iterations: core, start
        and end -1) are not drawn.

    Raises
    ------
    ConfigError
        An argument of the wrong kind, arrays that a ``timeline.npz`` with them would be
        refused for (:func:`~simsched.plotting.runfolder.check_timeline`: an array
        missing, per-strand arrays of other lengths, shapes or dtypes, a core that
        ``socket_of_core`` lacks...), or a frame that ``subtree`` lacks.
    """
    from collections.abc import Mapping

    import matplotlib.pyplot as plt

    from simsched.plotting.figures import axes_or_none, check_title, literal, style

    if not isinstance(color_by, str) or color_by not in COLOR_BY:
        raise ConfigError(f"color_by {shown(color_by)}: expected subtree, socket or job")
    if not isinstance(arrays, Mapping):
        raise ConfigError(f"arrays={shown(arrays)}: expected a run's timeline (load_timeline)")
    # what a timeline.npz read from disk is checked for (a value of another type or
    # length failed inside numpy or matplotlib)
    arrays = check_timeline(arrays)
    # A sampled run's strands of the iterations it extrapolated have no core: not drawn.
    every = len(arrays["core"])
    arrays = replayed_only(arrays)
    left_out = every - len(arrays["core"])
    title = check_title(title) or ""
    ax = axes_or_none(ax)
    if subtree is not None:
        subtree = np.asarray(subtree)
        if subtree.ndim != 1 or subtree.dtype.kind not in "iu":
            raise ConfigError("subtree: expected an integer array, one entry per frame")
    if color_by == "job" and "job" not in arrays:
        raise ConfigError("color_by 'job': not the timeline of a job-set run (no job array)")
    core = np.asarray(arrays["core"])
    start = np.asarray(arrays["start"])
    end = np.asarray(arrays["end"])
    frame = np.asarray(arrays["frame"])
    sock = np.asarray(arrays["socket_of_core"])
    if subtree is not None and len(frame) and int(frame.max()) >= len(subtree):
        raise ConfigError(
            f"subtree: {len(subtree)} entries, but the timeline has frame {int(frame.max())}"
        )
    ncores = len(sock)
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(10, 0.6 + 0.28 * ncores))
        else:
            fig = ax.figure
        if color_by == "socket":
            key = sock[core]
        elif color_by == "job":
            key = np.asarray(arrays["job"])
        else:
            key = subtree[frame] if subtree is not None else frame
        cmap = plt.get_cmap("tab20")
        uniq = np.unique(key)
        legend: list[Any] = []
        for k in uniq.tolist():
            sel = key == k
            serial = color_by == "subtree" and k < 0
            color = "0.6" if serial else cmap(int(k) % 20)
            for c in np.unique(core[sel]).tolist():
                m = sel & (core == c)
                spans = list(zip(start[m].tolist(), (end[m] - start[m]).tolist(), strict=True))
                ax.broken_barh(spans, (c - 0.4, 0.8), facecolors=color, linewidth=0)
            legend.append((serial, k, color))
        _colour_key(ax, legend, color_by, subtree is not None)
        ax.set_ylim(-0.6, ncores - 0.4)
        ax.set_yticks(range(ncores))
        ax.set_yticklabels([f"{c} (s{int(sock[c])})" for c in range(ncores)], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("cycle")
        ax.set_ylabel("core (socket)")
        right = max(int(end.max()) if end.size else 1, 1)
        if len(ax.get_shared_x_axes().get_siblings(ax)) > 1:
            # A shared axis shows every panel whole: never cut a longer run drawn before.
            right = max(right, ax.get_xlim()[1])
        ax.set_xlim(0, right)
        sampled = f" ({len(core):,} of {every:,} strands: a sampled run's replayed part)"
        ax.set_title(
            literal(title)
            if title
            else f"strands coloured by {color_by}" + (sampled if left_out else "")
        )
        fig.tight_layout()
    return fig
