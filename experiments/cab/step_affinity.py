"""Whether an iterative program's blocks stay on their sockets from one iteration to the next.

    python experiments/cab/step_affinity.py TRACE RUN [RUN ...] [--level L] [--baseline RUN]
        [--figure PATH]

TRACE is the trace the runs replayed; each RUN is a ``simsched run --out`` folder (its
``timeline.npz`` has, per strand, the core, start and end).  A *block* is a frame at level
``L`` of the DAG (main is level 0) with everything below it; ``L`` defaults to the boundary
level ``bl`` a CAB run records (its inter-socket tasks), so give ``--level`` when no run is
CAB's.  Within an iteration the blocks are ranked by their spawn keys, so rank ``r`` is the
same part of the data in every iteration of a generator's loop (GE's trailing-matrix
quarters, a stencil's row bands).  A block's *owner* is the socket whose cores ran most of
its strand cycles.

One JSON line per run:

* ``concentration``: the share of the blocks' strand cycles that ran on their owners (1.0:
  every block ran on one socket, as CAB's squads run an inter-socket task);
* ``same_owner_share``: over pairs of consecutive iterations, the share of ranks whose owner
  did not change (a socket finds the block's data in its shared cache only if it ran the
  block last time);
* ``by_same_owner``: the iterations grouped by the share of their blocks that kept their
  owner, each group's size and mean length in cycles (an iteration's length is from the
  previous iteration's last strand's end to its own);
* ``busy_cores_by_socket``: per socket, its strands' cycles over the iterations' lengths.

With ``--baseline RUN`` (another run of the trace, WS's say) every group, and the line,
also have ``mean_ratio_to_baseline``: the mean over the group's iterations of the run's
length over the baseline's length of the same iteration, so that iterations of different
sizes (GE's trailing matrix shrinks) compare like with like.

``--figure PATH`` also draws, per run, which socket owned each block in each iteration
(one row per block rank, one column per iteration) and, with ``--baseline``, every
iteration's length over the baseline's against the share of its blocks that kept their
owner, with each share's mean.  The format comes from the suffix.

The first iteration has no length (no iteration ends before it; it also holds the
program's serial start) and serves only as the one before the second.  Of a sampled run
only the detailed iterations are in the timeline; only consecutive ones are compared.
docs/experiments.md uses this on the CAB study's GE.  Hand-written rather than a library
call: it reads simsched's own timeline and frame table.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsched.errors import ConfigError, SimschedError
from simsched.experiments.scripts import json_line, load_run, run_script, usage_error
from simsched.plotting.figures import figure_format, save, style
from simsched.trace import Trace, open_trace

PROG = "step_affinity.py"


def blocks(t: Trace, level: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The trace's blocks at ``level``.

    Parameters
    ----------
    t
        The open trace.
    level
        The blocks' level in the DAG (main is 0).

    Returns
    -------
    tuple
        One row per block (``frame``, ``iteration``, ``rank`` in spawn-key order within its
        iteration); per frame its block (-1 above ``level``) and its iteration.
    """
    fr = t.frames
    parent = np.asarray(fr.parent, dtype=np.int64)
    depth = np.asarray(fr.level, dtype=np.int64)
    iteration = np.asarray(fr.iteration, dtype=np.int64)
    at = np.flatnonzero(depth == level)
    keys = {int(f): (int(iteration[f]), fr.key(int(f))) for f in at}
    block = np.arange(len(parent), dtype=np.int64)
    # Climb every frame below the level to its ancestor at the level, one level per pass.
    for _ in range(max(int(depth.max(initial=0)) - level, 0)):
        up = depth[block] > level
        block[up] = parent[block[up]]
    block[depth < level] = -1
    order = sorted(keys, key=keys.__getitem__)
    table = pd.DataFrame({"frame": order, "iteration": iteration[order]})
    table["rank"] = table.groupby("iteration").cumcount()
    return table, block, iteration


def owners(timeline: dict[str, np.ndarray], table: pd.DataFrame, block: np.ndarray) -> pd.DataFrame:
    """``table`` with each block's ``owner`` socket and ``own_share`` of its strand cycles
    and ``cycles``, for the blocks that ran."""
    frame, socket, cycles, ran = _strands(timeline)
    b = block[frame]
    keep = (b >= 0) & ran
    per = (
        pd.DataFrame({"frame": b[keep], "socket": socket[keep], "cycles": cycles[keep]})
        .groupby(["frame", "socket"])["cycles"]
        .sum()
        .unstack(fill_value=0)
    )
    summed = per.sum(axis=1)
    out = pd.DataFrame(
        {
            "owner": per.idxmax(axis=1),
            "own_share": per.max(axis=1) / summed.where(summed > 0, 1),
            "cycles": summed,
        }
    )
    return table.join(out, on="frame", how="inner").reset_index(drop=True)


def _sockets(timeline: dict[str, np.ndarray]) -> int:
    """The run's machine's sockets."""
    return int(np.asarray(timeline["socket_of_core"]).max()) + 1


def _strands(
    timeline: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per strand its frame, socket, cycles and whether it ran (a sampled run leaves the
    skipped iterations' strands with core -1)."""
    core = np.asarray(timeline["core"])
    ran = core >= 0
    socket = np.where(ran, np.asarray(timeline["socket_of_core"])[np.maximum(core, 0)], -1)
    cycles = np.where(ran, np.asarray(timeline["end"]) - np.asarray(timeline["start"]), 0)
    return np.asarray(timeline["frame"]), socket, cycles, ran


def iteration_lengths(timeline: dict[str, np.ndarray], iteration: np.ndarray) -> pd.Series:
    """Per iteration that ran whole and follows one that did, its length in cycles: from
    the previous iteration's last strand's end to its own.

    Parameters
    ----------
    timeline
        The run's ``timeline.npz`` arrays.
    iteration
        Per frame of the trace its iteration (-1 outside the loop).

    Returns
    -------
    pandas.Series
        Lengths indexed by iteration.
    """
    frame, _, _, ran = _strands(timeline)
    it = iteration[frame]
    # Frames outside the loop (main's own strands) have no iteration (-1); an iteration
    # that a sampled run skipped, or left unfinished, has strands that did not run.
    whole = np.setdiff1d(np.unique(it[it >= 0]), it[~ran])
    looped = np.isin(it, whole)
    ends = pd.Series(np.asarray(timeline["end"])[looped]).groupby(it[looped]).max()
    return ends.diff()[ends.index.to_series().diff() == 1]


def owner_map(table: pd.DataFrame) -> pd.DataFrame:
    """Each block's owner socket, one row per iteration and one column per rank (NaN where
    the block did not run)."""
    return table.pivot(index="iteration", columns="rank", values="owner")


def per_iteration(
    timeline: dict[str, np.ndarray],
    table: pd.DataFrame,
    iteration: np.ndarray,
    *,
    baseline: pd.Series | None = None,
) -> pd.DataFrame:
    """Per iteration with a length (:func:`iteration_lengths`): its ``cycles``, the share
    of its blocks that kept the previous iteration's owner (``same_owner``, NaN when the
    previous iteration did not run) and, with ``baseline``, its length over the
    baseline's (``ratio``, NaN where the baseline has no length); indexed by iteration.
    The arguments are :func:`summarise`'s, which draws its line from this table.
    """
    lengths = iteration_lengths(timeline, iteration)
    owner = owner_map(table)
    kept = (owner == owner.shift()).where(owner.notna() & owner.shift().notna())
    out = pd.DataFrame({"cycles": lengths, "same_owner": kept.mean(axis=1).reindex(lengths.index)})
    if baseline is not None:
        out["ratio"] = lengths / baseline.reindex(lengths.index)
    return out


def summarise(
    timeline: dict[str, np.ndarray],
    table: pd.DataFrame,
    iteration: np.ndarray,
    *,
    baseline: pd.Series | None = None,
) -> dict:
    """The JSON line of one run (see the module docstring).

    Parameters
    ----------
    timeline
        The run's ``timeline.npz`` arrays.
    table
        The blocks and their owners in this run (:func:`owners`).
    iteration
        Per frame of the trace its iteration.
    baseline
        Another run's :func:`iteration_lengths`: each group then also has the mean of this
        run's lengths over the baseline's, iteration by iteration.

    Returns
    -------
    dict
        The line's fields.
    """
    return _line(
        timeline, table, iteration, per_iteration(timeline, table, iteration, baseline=baseline)
    )


def _line(
    timeline: dict[str, np.ndarray], table: pd.DataFrame, iteration: np.ndarray, per: pd.DataFrame
) -> dict:
    """:func:`summarise`'s line from the run's :func:`per_iteration` table (a ``ratio``
    column when it was made with a baseline)."""
    frame, socket, cycles, _ = _strands(timeline)
    it = iteration[frame]
    lengths, same = per["cycles"], per["same_owner"]
    measured = table[table["iteration"].isin(lengths.index)]
    if lengths.empty or measured.empty:
        return {"iterations": 0}
    in_measured = np.isin(it, lengths.index)
    busy = np.bincount(
        socket[in_measured], weights=cycles[in_measured], minlength=_sockets(timeline)
    )
    busy /= float(lengths.sum())
    ratio = per["ratio"].dropna() if "ratio" in per else None

    def group(rows: pd.Series) -> dict:
        out = {"iterations": int(rows.size), "mean_cycles": round(float(rows.mean()))}
        if ratio is not None:
            r = ratio.reindex(rows.index).dropna()
            out["mean_ratio_to_baseline"] = round(float(r.mean()), 3) if len(r) else None
        return out

    line = {
        "iterations": int(lengths.size),
        "blocks_per_iteration": int(measured.groupby("iteration").size().median()),
        "concentration": round(
            float((measured["own_share"] * measured["cycles"]).sum())
            / float(measured["cycles"].sum()),
            3,
        ),
        "same_owner_share": round(float(same.mean()), 3) if same.notna().any() else None,
        "by_same_owner": {f"{k:.2f}": group(g) for k, g in lengths.groupby(same.round(2))},
        "mean_iteration_cycles": round(float(lengths.mean())),
        "busy_cores_by_socket": [round(float(x), 2) for x in busy],
    }
    if ratio is not None:
        line["baseline_iterations"] = int(ratio.size)
        line["mean_ratio_to_baseline"] = round(float(ratio.mean()), 3) if len(ratio) else None
    return line


def figure(
    runs: list[tuple[str, pd.DataFrame, pd.DataFrame]], sockets: int, baseline_label: str | None
) -> Figure:
    """Which socket owned each block in each iteration, one panel per run, and (when the
    runs were compared with a baseline) each iteration's length over the baseline's
    against the share of its blocks that kept their owner.

    Parameters
    ----------
    runs
        Per run its label, :func:`owner_map` and :func:`per_iteration`.
    sockets
        The machine's sockets (one colour each).
    baseline_label
        The baseline run's label, or None for no ratio panel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap

    ratio = baseline_label is not None
    panels = len(runs) + (1 if ratio else 0)
    with style():
        # Sockets take the style's colour-blind-safe cycle; the runs in the ratio panel
        # are told apart by grey level and marker, so no colour means two things.
        cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        cmap = ListedColormap([cycle[k % len(cycle)] for k in range(sockets)])
        norm = BoundaryNorm(np.arange(sockets + 1) - 0.5, sockets)
        fig, axes = plt.subplots(
            panels,
            1,
            figsize=(7.0, 0.6 + 1.0 * len(runs) + (2.6 if ratio else 0.0)),
            gridspec_kw={"height_ratios": [1.0] * len(runs) + ([2.4] if ratio else [])},
            squeeze=False,
            layout="constrained",
        )
        image = None
        for ax, (label, owner, _) in zip(axes[:, 0], runs, strict=False):
            its = owner.index.to_numpy()
            full = owner.reindex(np.arange(its.min(), its.max() + 1))
            image = ax.imshow(
                full.T.to_numpy(dtype=float),
                aspect="auto",
                interpolation="nearest",
                cmap=cmap,
                norm=norm,
                extent=(its.min() - 0.5, its.max() + 0.5, owner.shape[1] - 0.5, -0.5),
            )
            ax.set_ylabel(f"{label}\nblock", fontsize="small")
            ax.set_yticks(range(owner.shape[1]))
            ax.grid(False)
        axes[len(runs) - 1, 0].set_xlabel("iteration")
        if image is not None:
            bar = fig.colorbar(image, ax=axes[: len(runs), 0].tolist(), ticks=range(sockets))
            bar.set_label("socket that ran the block")
        if ratio:
            ax = axes[-1, 0]
            rng = np.random.default_rng(0)  # jitter only: fixed, so the figure is reproducible
            greys, marks = ("black", "0.55", "0.3", "0.75"), "osD^v"
            for k, (label, _, per) in enumerate(runs):
                ok = per.dropna(subset=["same_owner", "ratio"])
                x = ok["same_owner"].to_numpy()
                grey, mark = greys[k % len(greys)], marks[k % len(marks)]
                ax.scatter(
                    x + rng.uniform(-0.03, 0.03, x.size),
                    ok["ratio"],
                    s=12,
                    alpha=0.45,
                    color=grey,
                    marker=mark,
                    label=f"{label}: one iteration",
                )
                means = ok.groupby(ok["same_owner"].round(2))["ratio"].mean()
                ax.plot(
                    means.index,
                    means.to_numpy(),
                    color=grey,
                    marker=mark,
                    markersize=8,
                    markerfacecolor="white",
                    lw=1.2,
                    label=f"{label}: mean",
                )
            ax.axhline(1.0, color="grey", lw=0.8, ls="--")
            ax.set_xlabel("share of the iteration's blocks on the previous iteration's socket")
            ax.set_ylabel(f"length / {baseline_label}'s")
            ax.legend(fontsize="small", loc="upper right")
    return fig


def main(argv: list[str] | None = None) -> None:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--level", type=int, help="the blocks' level (default: a CAB run's bl)")
    ap.add_argument("--baseline", type=Path, help="a run to compare iteration by iteration")
    ap.add_argument(
        "--figure", type=Path, help="also draw the owners and (with --baseline) the lengths"
    )
    args = ap.parse_args(argv)
    if args.figure is not None:
        try:
            figure_format(args.figure)
        except ConfigError as exc:
            usage_error(str(exc), PROG)
    try:
        trace = open_trace(args.trace)
    except (OSError, SimschedError) as exc:
        usage_error(f"{args.trace}: {exc}", PROG)
    with trace:
        _report(args, trace)


def _report(args: argparse.Namespace, trace: Trace) -> None:
    """Print the runs' lines (see the module docstring) once the trace is open."""
    digest = trace.header.digest
    # only the iterations each run replayed in detail are compared (the module docstring)
    runs = [(run, *load_run(run, digest, args.trace, PROG, sampled_ok=True)) for run in args.runs]
    level = args.level
    if level is None:
        cab = next((r for _, r, _ in runs if isinstance(r.get("bl"), int)), None)
        if cab is None:
            usage_error("no run records a CAB boundary level `bl`: give --level", PROG)
        level = cab["bl"]
        if level < 1:
            usage_error(
                f"the CAB run's bl is {level} ({cab.get('bl_reason')}): it has no "
                "inter-socket tasks; give --level",
                PROG,
            )
    if level < 1:
        usage_error(f"--level {level}: blocks are below main, level 1 or deeper", PROG)
    table, block, iteration = blocks(trace, level)
    if table.empty:
        usage_error(f"{args.trace}: no frame at level {level}", PROG)
    base = None
    if args.baseline is not None:
        _, base_timeline = load_run(args.baseline, digest, args.trace, PROG, sampled_ok=True)
        base = iteration_lengths(base_timeline, iteration)
    drawn = []
    sockets = 1
    for run, record, timeline in runs:
        try:
            own = owners(timeline, table, block)
            per = per_iteration(timeline, own, iteration, baseline=base)
            line = _line(timeline, own, iteration, per)
        except (KeyError, IndexError) as exc:
            usage_error(f"{run / 'timeline.npz'}: not a timeline of this trace ({exc})", PROG)
        head = {"run": str(run), "scheduler": record.get("scheduler")}
        head.update({"makespan_cycles": record.get("makespan_cycles"), "level": level})
        print(json_line({**head, **line}))
        if args.figure is not None and not own.empty:
            drawn.append((f"{run.name} ({record.get('scheduler')})", owner_map(own), per))
            sockets = max(sockets, _sockets(timeline))
    if args.figure is not None and drawn:
        base_label = None if args.baseline is None else args.baseline.name
        save(figure(drawn, sockets, base_label), args.figure)


if __name__ == "__main__":
    run_script(main, PROG)
