"""A comparison's runs saved as a results store (``simsched compare --out DIR``).

Each run of :func:`simsched.compare` becomes one point of the store's layout
(:mod:`simsched.experiments.store`): ``DIR/points/<id>/point.json``, ``row.json``,
``result.json`` and ``timeline.npz``, and ``DIR/results.parquet`` over them all, so
``simsched results show DIR``, ``simsched plot sweep DIR`` and
:func:`~simsched.experiments.load_results` read a comparison as they read a sweep.  The
point id hashes what determines the run (trace digest and path, resolved machine,
scheduler, parameters, seed, and the sampling settings of a sampled comparison), so saving
the same comparison again replaces its points.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simsched.canonical import content_hash
from simsched.engine.record import nest_fields, write_npz_atomic
from simsched.errors import ConfigError, shown, spelled
from simsched.experiments.schema import format_params
from simsched.experiments.spec import Point
from simsched.experiments.store import POINT_FILE, consolidate, point_dir, write_row
from simsched.files import write_json_atomic
from simsched.params import name_text

#: The ``sweep`` column of a saved comparison.
SWEEP_NAME = "compare"


def comparison_point(
    record: dict[str, Any],
    trace_path: str | os.PathLike,
    machine: Any,
    overrides: dict[str, Any] | None,
    out_dir: Path,
) -> Point:
    """The store point of one compared run.

    Parameters
    ----------
    record
        The run's flat record.
    trace_path
        The trace the comparison replayed.
    machine
        The machine as given to ``compare`` (a preset name or file is kept as the source).
    overrides
        Dotted machine overrides given to ``compare``.
    out_dir
        The store's folder.
    """
    resolved = json.loads(record["machine_config"])
    params = json.loads(record["params"])
    path = str(Path(trace_path).resolve())
    workload = {"kind": "trace", "path": path, "digest": record["trace_digest"]}
    scheduler = {"name": record["scheduler"], "params": params}
    determines: dict[str, Any] = {
        "workload": workload,
        "machine": resolved,
        "scheduler": scheduler,
        "seed": record["seed"],
    }
    # as a sweep's points: sampled and detailed runs of one comparison saved into one folder
    # replaced each other's rows without a word
    k = int(record.get("sample_iterations") or 0) or None
    precision = float(record.get("sample_precision") or 0.0) if k else None
    if k:
        determines.update(sample_iterations=k, sample_precision=precision)
    pid = content_hash(determines)
    source = os.fspath(machine) if isinstance(machine, str | os.PathLike) else record["machine"]
    # Labelled as a sweep labels a machine entry with overrides: comparisons of one machine
    # with and without them, saved into one folder, were rows of the same machine label.
    label = record["machine"] + (f"[{format_params(overrides)}]" if overrides else "")
    return Point(
        id=pid,
        sweep=SWEEP_NAME,
        # a label is a column of the Parquet table, which takes only UTF-8 text
        workload={"label": name_text(Path(trace_path).stem), **workload},
        machine={
            "label": label,
            "source": source,
            "overrides": dict(overrides or {}),
            "resolved": resolved,
        },
        scheduler={"label": _scheduler_label(record["scheduler"], params), **scheduler},
        seed=int(record["seed"]),
        trace_cache=str(out_dir / "traces"),
        spec_dir=str(out_dir),
        sample_iterations=k,
        sample_precision=precision,
    )


def _scheduler_label(name: str, params: dict[str, Any]) -> str:
    """A compared scheduler's label: its name, and the parameters given that differ from
    its defaults as a sweep's grid shows them (``ws[spawn_policy=parent-first]``), so two
    comparisons of one policy with different parameters saved into one folder are not rows
    of one label."""
    from simsched.schedulers import get_scheduler  # as check_spec: only when asked

    defaults = get_scheduler(name).params_schema.defaults()
    given = {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}
    return name + (f"[{format_params(given)}]" if given else "")


def save_comparison(
    out_dir: str | os.PathLike,
    results: Sequence[Any],
    trace: Any,
    machine: Any,
    overrides: dict[str, Any] | None = None,
    *,
    table: bool = True,
) -> Path:
    """Write the runs of a comparison as a results store; returns ``results.parquet``.

    Parameters
    ----------
    out_dir
        The store's folder (created; points of an earlier save are kept or replaced).
    results
        The :class:`simsched.api.RunResult` of every run (``simsched.compare``'s answer).
    trace
        The trace path (or open trace) the runs replayed.
    machine
        The machine as given to ``compare``.
    overrides
        Dotted machine overrides given to ``compare``.
    table
        Rebuild ``results.parquet`` from every point of the folder (default).  A caller
        that saves the runs one by one as they end passes False and calls
        :func:`simsched.experiments.store.consolidate` once at the end: rebuilding it after
        each run made saving N runs cost N^2.

    Raises
    ------
    ConfigError
        ``out_dir`` exists and is not a folder.
    """
    from simsched.api import RunResult
    from simsched.files import check_path
    from simsched.params import check_mapping
    from simsched.trace import open_trace

    out = check_path(out_dir, "out_dir")
    if out.exists() and not out.is_dir():
        raise ConfigError(
            spelled(
                f"out_dir={str(out)!r}: exists and is not a folder",
                f"--out {out}: exists and is not a folder (--out names a folder)",
            )
        )
    overrides = check_mapping(overrides, "overrides") or None
    if isinstance(results, RunResult) or not isinstance(results, Sequence):
        raise ConfigError(
            f"results={shown(results)}: expected the list of RunResult that compare() returns"
        )
    for i, res in enumerate(results):
        if not isinstance(res, RunResult):
            raise ConfigError(f"results[{i}]: {shown(res)} is not a RunResult of compare()")
        if res.record.get("status") != "ok":
            raise ConfigError(f"results[{i}]: the run failed ({res.record.get('error') or '?'})")
    if hasattr(trace, "header"):
        trace_path, digest = trace.path, trace.header.digest
    else:
        # the rows name their workload after this trace: another one's runs were stored
        # under its name (the runs of fib as heat)
        trace_path = check_path(trace, "trace")
        with open_trace(trace_path) as t:
            digest = t.header.digest
    for i, res in enumerate(results):
        if res.record.get("trace_digest") != digest:
            raise ConfigError(
                f"results[{i}]: replayed another trace than {trace_path} (its digest differs)"
            )
    # The rows are labelled with this machine and these overrides: runs on another machine
    # were stored as its (and runs without overrides labelled with them)
    from simsched.machine import load_machine
    from simsched.machine.loader import machine_config

    given = json.loads(json.dumps(machine_config(load_machine(machine, overrides))))
    for i, res in enumerate(results):
        if json.loads(res.record.get("machine_config") or "null") != given:
            with_ = f" with overrides {format_params(overrides)}" if overrides else ""
            raise ConfigError(
                f"results[{i}]: replayed another machine than {shown(machine)}{with_} "
                f"(the run's was {res.record.get('machine')!r} as resolved)"
            )
    for res in results:
        rec = res.record
        point = comparison_point(rec, trace_path, machine, overrides, out)
        pdir = point_dir(out, point.id)
        write_json_atomic(pdir / POINT_FILE, point.to_dict())
        write_json_atomic(pdir / "result.json", nest_fields(rec))
        arrays = res.timeline_arrays()
        if arrays:
            write_npz_atomic(pdir / "timeline.npz", **arrays)
        write_row(out, point.id, point.columns(), rec, float(rec.get("wall_s", 0.0)))
    return consolidate(out) if table else out / "results.parquet"
