"""Per-iteration time and packing of iterative runs ([LAWS15] Fig. 8).

Reads result records (``result.json`` of ``simsched run --out``, or records of a results
table).  One line per record: the time of every iteration replayed, as the period between
the end of the previous iteration and its own (``iteration_ends``, which every run on a
trace with iterations writes, whatever its policy, so that lines of different policies
measure the same thing); a record written before runs kept them draws LAWS's and CATS's
``iteration_cycles`` instead (from an iteration's first spawn; ``-1`` for an iteration a
sampled run left out, drawn as a gap).  For records with a packing (``laws``/``cats``), a
lower panel gives the number of CF roots each iteration ran under, so that Algorithm 1's
moves are visible beside the time they produced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from simsched.errors import ConfigError, shown
from simsched.plotting.figures import check_title, literal, style
from simsched.plotting.runfolder import check_finished, is_int, read_record, result_file

#: Why a record has no iteration times, and what to do (the errors' end).
NO_TIMES_WHY = (
    "iteration_ends, iteration_cycles: its trace has no iterations, or a simsched that "
    "kept them only under laws, laws-nc, cats or sampling wrote it; replay a trace with "
    "iterations"
)


def _field(rec: Mapping[str, Any], key: str, where: str | Path = "record") -> Any:
    """``rec[key]`` (None when missing), parsed when it is JSON text (a results table's
    column); ``where`` names the record in the error."""
    v = rec.get(key)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            raise ConfigError(f"{where}: field {key!r} is not JSON: {v[:40]!r}") from None
    return v


def has_iterations(rec: Mapping[str, Any]) -> bool:
    """Whether a record has iteration times to draw: a non-empty ``iteration_ends`` or
    ``iteration_cycles`` (a list, or the JSON text of one in a results table's column)."""
    return bool(_field(rec, "iteration_ends") or _field(rec, "iteration_cycles"))


def _times(ends: Any, cycles: Any) -> list[float]:
    """The time of every iteration the figure draws (see the module docstring) from a
    record's parsed ``iteration_ends`` and ``iteration_cycles``: the periods of the ends
    when it has them, else the cycles with NaN for the iterations a sampled run left out;
    ``[]`` when it has neither."""
    if ends:
        return [float(e - p) for p, e in zip([0, *ends[:-1]], ends, strict=True)]
    return [float(c) if c >= 0 else math.nan for c in cycles or []]


def load_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Result records from result folders or ``result.json`` files.

    Raises
    ------
    ConfigError
        A path without a readable ``result.json``, one that is not a result record
        (:func:`~simsched.plotting.runfolder.read_record`), or the record of a run that
        failed or was interrupted.
    """
    if isinstance(paths, str | PathLike):  # one path, not the letters of one
        paths = [paths]
    if not isinstance(paths, Iterable):
        raise ConfigError(f"paths={shown(paths)}: expected result folders or result.json files")
    out = []
    for p in paths:
        rec = read_record(p)
        # a failed run has no iteration_cycles: it was "no record has iteration_cycles"
        check_finished(result_file(p), rec, "no iteration times were recorded")
        _check_fields(result_file(p), rec)
        out.append(rec)
    return out


def _check_fields(where: str | Path, rec: Mapping[str, Any]) -> tuple[list[float], Any]:
    """What the figure draws of a record: its iteration times (:func:`_times`) and its
    ``packing`` (parsed; None when missing), if ``iteration_ends``, ``iteration_cycles``
    and ``packing`` have the types a run writes, else a one-line :class:`ConfigError`
    naming ``where`` (the record's file, or the argument): a damaged record's strings or
    negative times were drawn, or failed inside matplotlib."""
    ends = _field(rec, "iteration_ends", where)
    if ends is not None and not (
        isinstance(ends, list)
        and all(is_int(e) and e >= 0 for e in ends)
        and all(a <= b for a, b in zip(ends, ends[1:], strict=False))
    ):
        raise ConfigError(f"{where}: field 'iteration_ends' is not a list of rising end cycles")
    cyc = _field(rec, "iteration_cycles", where)
    # -1: an iteration a sampled run did not replay
    if cyc is not None and not (isinstance(cyc, list) and all(is_int(c) and c >= -1 for c in cyc)):
        raise ConfigError(f"{where}: field 'iteration_cycles' is not a list of cycle counts")
    packing = _field(rec, "packing", where)
    ok = packing is None or (
        isinstance(packing, list)
        and all(
            isinstance(e, dict)
            and ("cf_roots" not in e or (is_int(e["cf_roots"]) and is_int(e.get("iteration"))))
            for e in packing
        )
    )
    if not ok:
        raise ConfigError(
            f"{where}: field 'packing' is not a list of {{iteration, cf_roots}} entries"
        )
    return _times(ends, cyc), packing


def plot_iterations(records: Iterable[Mapping[str, Any]], title: str = "") -> Figure:
    """Iteration time (and CF roots, where known) of each record.

    Parameters
    ----------
    records
        Result records with ``iteration_ends`` or ``iteration_cycles``.
    title
        Figure title.

    Raises
    ------
    ConfigError
        No record has iteration times (the trace has no iteration marks, or the record
        is older than ``iteration_ends`` and its policy measured none), or a record's
        ``iteration_ends``, ``iteration_cycles`` or ``packing`` is not of the type a run
        writes (what :func:`load_records` checks).
    """
    title = check_title(title) or ""
    if isinstance(records, Mapping):  # one record
        records = [records]
    if not isinstance(records, Iterable) or isinstance(records, str | bytes):
        raise ConfigError(f"records={shown(records)}: expected result records (load_records)")
    rows = []
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ConfigError(f"records[{i}]={shown(rec)}: expected a result record (a dict)")
        # the check of load_records: a record made or changed in Python has not had it
        times, packing = _check_fields(f"records[{i}]", rec)
        if times:  # has_iterations' reading, without parsing the fields twice
            label = f"{rec.get('scheduler', '?')} (seed {rec.get('seed', '?')})"
            rows.append((label, times, packing or []))
    if not rows:
        raise ConfigError(f"no record has iteration times ({NO_TIMES_WHY})")
    packed = any(any(p.get("cf_roots") for p in pk) for _, _, pk in rows)
    with style():
        if packed:
            fig, (ax, ax2) = plt.subplots(
                2, 1, sharex=True, figsize=(6.4, 4.8), height_ratios=[3, 1]
            )
        else:
            fig, ax = plt.subplots(figsize=(6.4, 3.6))
        for label, cyc, pk in rows:
            (line,) = ax.plot(range(len(cyc)), cyc, marker="o", ms=3, label=literal(label))
            pk = [p for p in pk if "cf_roots" in p]  # entries of other moves have none
            if packed and pk:
                ax2.step(
                    [p["iteration"] for p in pk],
                    [p["cf_roots"] for p in pk],
                    where="mid",
                    color=line.get_color(),
                )
        ax.set_ylabel("iteration time (cycles)")
        ax.legend(fontsize="small")
        if title:
            ax.set_title(literal(title))
        if packed:
            ax2.set_ylabel("CF roots")
            ax2.set_xlabel("iteration")
        else:
            ax.set_xlabel("iteration")
        fig.tight_layout()
    return fig
