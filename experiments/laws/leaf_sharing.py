"""Where a stencil's DRAM lines go: each leaf's lines against where and when its neighbours ran.

    python experiments/laws/leaf_sharing.py TRACE RUN [RUN ...] [--all-iterations]

TRACE is the trace the runs replayed; each RUN is a ``simsched run --out`` folder (its
``timeline.npz`` has, per strand, the core, start, end and the DRAM lines it fetched).  A
*leaf* is a frame that spawns nothing; within an iteration the leaves are ordered by their
spawn keys, which for the row-splitting stencil generators is their order in the grid, so
leaves ``r - 1`` and ``r + 1`` are the ones whose rows its halo reads.

One JSON line per run:

* ``neighbour_share``: of the times a core goes from one leaf to the next, the share where
  the next is a neighbour of the last in the same iteration (a run of neighbouring leaves
  on one core, whose shared planes its private caches may still hold);
* ``after_neighbour_on_core`` and ``not_after_neighbour_on_core``: the leaves a core ran
  right after one of their neighbours and the others, each group's size and mean DRAM
  lines per leaf;
* ``by_near_neighbours``: the leaves grouped by how many of their two neighbours ran on the
  same socket at about the same time (overlapping the leaf, or ending less than one median
  leaf duration before it began), each group's size and mean DRAM lines per leaf: halo
  planes one socket's cores share can be served by that socket's cache;
* ``dram_per_leaf``: the mean over all leaves.

The first iteration is left out unless ``--all-iterations`` is given (the locality-aware
policies profile it).  docs/experiments.md uses this on the LAWS Intel study's 25P to
check which sharing gives LAWS-NC its fewer DRAM lines.  Hand-written rather than a
library call: it reads simsched's own timeline and frame table.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, so that Ctrl-C while numpy and pandas load is one line
    from simsched.interrupts import while_loading

    while_loading()

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.errors import SimschedError
from simsched.experiments.scripts import json_line, load_run, run_script, usage_error
from simsched.trace import open_trace
from simsched.trace.structure import has_children

PROG = "leaf_sharing.py"


def leaf_positions(trace: str | Path) -> tuple[pd.DataFrame, str]:
    """The trace's leaves: ``frame``, ``iteration`` and ``rank`` (spawn-key order within
    the iteration), and the trace's digest.

    Parameters
    ----------
    trace
        Path of the trace file.

    Returns
    -------
    tuple[pandas.DataFrame, str]
        One row per leaf frame; the digest a run of this trace records (``trace_digest``).
    """
    with open_trace(trace) as t:
        digest = t.header.digest
        fr = t.frames
        parent = np.asarray(fr.parent)
        iteration = np.asarray(fr.iteration)
        has_child = has_children(parent)
        leaves = sorted(
            (f for f in range(1, len(fr)) if not has_child[f]),
            key=lambda f: (int(iteration[f]), fr.key(f)),
        )
    table = pd.DataFrame({"frame": leaves, "iteration": iteration[leaves].astype(np.int64)})
    table["rank"] = table.groupby("iteration").cumcount()
    return table, digest


def leaf_table(timeline: dict[str, np.ndarray], positions: pd.DataFrame) -> pd.DataFrame:
    """Per leaf: its position, ``core``, ``socket``, ``start``, ``end`` and ``dram`` lines
    (local + remote), summed over the leaf's strands."""
    tl = pd.DataFrame(
        {
            "frame": timeline["frame"],
            "core": timeline["core"],
            "start": timeline["start"],
            "end": timeline["end"],
            "dram": timeline["dram_local"].astype(np.int64) + timeline["dram_remote"],
        }
    )
    per = tl.groupby("frame").agg(
        core=("core", "first"), start=("start", "min"), end=("end", "max"), dram=("dram", "sum")
    )
    table = positions.join(per, on="frame", how="inner")
    table["socket"] = np.asarray(timeline["socket_of_core"])[table["core"].to_numpy()]
    return table.reset_index(drop=True)


def summarise(table: pd.DataFrame, *, first_iteration: bool = False) -> dict:
    """The JSON line of one run (see the module docstring) from :func:`leaf_table`."""
    if not first_iteration:
        table = table[table["iteration"] != table["iteration"].min()]
    table = table.reset_index(drop=True)
    if table.empty:
        return {"leaves": 0}
    by_core = table.sort_values(["core", "start"])
    prev = by_core.groupby("core")[["iteration", "rank"]].shift()
    moves = prev["rank"].notna()
    after = (prev["iteration"] == by_core["iteration"]) & (
        (prev["rank"] - by_core["rank"]).abs() == 1
    )
    neighbour = after[moves]
    after = after.reindex(table.index)
    span = float(np.median(table["end"] - table["start"]))
    at = {(leaf.iteration, leaf.rank): leaf for leaf in table.itertuples()}
    near = np.zeros(len(table), dtype=int)
    for leaf in table.itertuples():
        for q in (leaf.rank - 1, leaf.rank + 1):
            n = at.get((leaf.iteration, q))
            if n is not None and n.socket == leaf.socket:
                near[leaf.Index] += n.start < leaf.end and n.end > leaf.start - span
    groups = table.groupby(near)["dram"]

    def lines(rows: pd.Series) -> dict:
        return {"leaves": int(rows.size), "dram_per_leaf": _mean(rows)}

    return {
        "leaves": len(table),
        "median_leaf_cycles": round(span),
        "neighbour_share": round(float(neighbour.mean()), 3) if len(neighbour) else None,
        "after_neighbour_on_core": lines(table["dram"][after]),
        "not_after_neighbour_on_core": lines(table["dram"][~after]),
        "by_near_neighbours": {str(k): lines(g) for k, g in groups},
        "dram_per_leaf": _mean(table["dram"]),
    }


def _mean(values: pd.Series) -> int | None:
    return round(float(values.mean())) if len(values) else None


def main(argv: list[str] | None = None) -> None:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--all-iterations", action="store_true", help="keep the first iteration")
    args = ap.parse_args(argv)
    try:
        positions, digest = leaf_positions(args.trace)
    except (OSError, SimschedError) as exc:
        usage_error(f"{args.trace}: {exc}", PROG)
    for run in args.runs:
        _, timeline = load_run(run, digest, args.trace, PROG)
        path = run / "timeline.npz"
        try:
            table = leaf_table(timeline, positions)
        except KeyError as exc:
            usage_error(f"{path}: not a timeline of a `simsched run --out` (no {exc})", PROG)
        if table.empty:
            usage_error(f"{path}: none of {args.trace}'s leaves ran", PROG)
        line = summarise(table, first_iteration=args.all_iterations)
        print(json_line({"run": str(run), **line}))


if __name__ == "__main__":
    run_script(main, PROG)
