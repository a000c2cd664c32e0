"""One sweep point: run it once, record it as a row, whatever happens.

The unit of work of a sweep is :func:`execute_point`: given a point (a small JSON-able dict:
recipes and the resolved machine, never trace data), the sweep's output folder and a *point
function*, it

1. returns at once if the point already has a ``row.json`` (so a re-run, or a task that a
   cluster retries after its worker died, never repeats finished work);
2. writes ``point.json`` (the resolved point) atomically;
3. calls the point function, which runs the simulation and returns its result record — any
   exception becomes a row with ``status="error"`` and the error text instead, so one failing
   point never stops the sweep — except a full disk (``ENOSPC``, ``EDQUOT``), the host's
   fault: then no row is written and the point stays pending (:data:`INTERRUPTED`);
4. writes ``row.json`` (point columns + record) atomically and returns it (a full disk
   here, or at step 2, leaves the point pending too).

The point function is injected (default :func:`simulate_point`, which makes the trace from the
recipe and calls :func:`simsched.run`); tests pass cheap functions so the runner is tested
without simulating.  Where ``execute_point`` runs is the executors' business
(:mod:`simsched.experiments.executors`); which points run, and the sweep's report, the
runner's (:mod:`simsched.experiments.runner`).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from simsched.errors import (
    ConfigError,
    SimschedError,
    Terminated,
    TraceFormatError,
    command_line,
    described,
    interrupt_in,
    shown,
    spelled,
)
from simsched.experiments.claims import PointClaim
from simsched.experiments.pointspec import Point, check_point
from simsched.experiments.store import (
    POINT_FILE,
    beyond_int64,
    not_utf8,
    point_dir,
    read_row,
    remove_temporaries,
    save_row,
    write_row,
)
from simsched.files import check_path, write_json_atomic
from simsched.host import process_cpu_s, speed_reference
from simsched.params import check_callable, check_flag

PointFunction = Callable[[Point, Path], dict[str, Any]]


def simulate_point(point: Point, run_dir: str | os.PathLike) -> dict[str, Any]:
    """Default point function: make the trace from the recipe and simulate it.

    A point that fails before :func:`simsched.run` (or :func:`simsched.run_jobs`) is
    called, or before the run resolved its configuration (the trace cannot be made, a
    job file is refused, a scheduler refuses a parameter), still leaves ``config.json``
    (what the point had resolved) and a ``result.json`` failure record, as a run that
    fails later does.

    Parameters
    ----------
    point
        The resolved point.
    run_dir
        The point's folder; :func:`simsched.run` writes ``config.json`` and ``result.json``
        there.

    Returns
    -------
    dict
        The run's flat result record.

    Raises
    ------
    ConfigError
        ``point`` is not a point of the shape a sweep makes (:func:`check_point`), or
        ``run_dir`` is not a path (a ``str`` or ``os.PathLike``).
    """
    point = check_point(point, "point")  # a dict failed with "has no attribute 'machine'"
    run_dir = check_path(run_dir, "run_dir")  # a str failed at its first `run_dir / name`
    # A point run again (--retry-failed, --rerun-stale) must not keep an earlier attempt's
    # files beside the new record: a failure before the run wrote them left them standing.
    for name in RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    t0 = time.perf_counter()
    resolved: dict[str, Any] = {}
    try:
        return _simulate(point, run_dir, resolved)
    except BaseException as exc:
        stop = interrupt_in(exc)  # Ctrl-C inside a compiled generator's call back
        _write_early_failure(point, run_dir, resolved, exc if stop is None else stop, t0)
        if stop is not None and stop is not exc:
            raise stop from None
        raise


#: The files :func:`simsched.run` and :func:`simsched.run_jobs` write in a point's folder.
RUN_FILES = ("config.json", "result.json", "timeline.npz")


def _simulate(point: Point, run_dir: Path, resolved: dict[str, Any]) -> dict[str, Any]:
    """:func:`simulate_point`'s work; ``resolved`` receives the machine and the trace as
    they are made, for the failure record."""
    from pydantic import ValidationError

    from simsched.machine import Machine
    from simsched.machine.loader import format_validation_error
    from simsched.trace.recipes import drop_damaged, ensure_trace
    from simsched.workloads import generate

    try:
        machine = Machine.model_validate(point.machine["resolved"])
    except ValidationError as exc:  # pydantic's own error, of many lines
        raise ConfigError(format_validation_error("point.machine['resolved']", exc)) from None
    resolved["machine"] = machine
    if point.workload.get("kind") == "jobs":
        return _simulate_jobs(point, machine, run_dir)
    trace = ensure_trace(point.workload, point.trace_cache, point.spec_dir, generate=generate)
    resolved["trace"] = trace
    import simsched

    run = getattr(simsched, "run", None)
    if run is None:
        raise RuntimeError("simsched.run is not available in this installation")
    seen = os.stat(trace)  # the file the run reads (see drop_damaged)
    try:
        result = run(
            str(trace),
            machine,
            point.scheduler["name"],
            dict(point.scheduler["params"]),
            point.seed,
            out_dir=run_dir,
            sample_iterations=point.sample_iterations,
            **(
                {}
                if point.sample_precision is None
                else {"sample_precision": point.sample_precision}
            ),
        )
    except TraceFormatError as exc:
        cached = Path(trace).resolve().parent == Path(point.trace_cache).resolve()
        if point.workload.get("kind") not in ("generator", "capture") or not cached:
            raise  # the user's own file: theirs to mend
        # The sweep's own cache: a damaged file (its digest no longer matches) failed this
        # point on every retry, and every other point of the recipe.  Removed, it is made
        # again by the next point that needs it.
        if not drop_damaged(trace, seen):
            raise  # already replaced by a sound one: this point's retry uses that
        raise TraceFormatError(
            f"{exc} (a damaged trace of the sweep's cache: removed, so that running the "
            "point again makes it anew)"
        ) from None
    rec = dict(result.record)
    if point.workload.get("kind") == "generator":
        # the trace's generator, which run() does not know, when it is a plug-in
        _note_generators(rec, result.record, run_dir, [point.workload["generator"]])
    return rec


def _note_generators(
    rec: dict[str, Any], written: dict[str, Any], run_dir: Path, generators: list[str]
) -> None:
    """Add the plug-ins among a point's workload ``generators`` to its record ``rec``
    (:func:`simsched.plugins.note_plugins`), and to the ``result.json`` the run wrote
    (``written``, the record as written) when that adds one, so that the run's own record
    names all the code its result depends on."""
    from simsched.api import _write_record
    from simsched.plugins import PLUGIN_FIELD, note_plugins

    note_plugins(rec, [("workload", g) for g in generators])
    ident = rec.get(PLUGIN_FIELD)
    if ident != written.get(PLUGIN_FIELD):
        _write_record(run_dir, {**written, PLUGIN_FIELD: ident})


def _write_early_failure(
    point: Point, run_dir: Path, resolved: dict[str, Any], exc: BaseException, t0: float
) -> None:
    """Write what a failed point's run did not: ``config.json`` from the point (and the
    machine and trace when they were made) and the ``result.json`` failure record, in the
    forms :func:`simsched.run` and :func:`simsched.run_jobs` give them."""
    from simsched.api import (
        DEFAULT_SAMPLE_PRECISION,
        _write_error,
        machine_fields,
        record_base,
        run_config,
    )
    from simsched.engine.record import dumps
    from simsched.engine.replay import DEFAULT_WINDOW
    from simsched.machine.loader import machine_config

    base = record_base(DEFAULT_WINDOW)
    machine = resolved.get("machine")
    mconfig = None if machine is None else machine_config(machine)
    if point.workload.get("kind") == "jobs":
        base.update(kind="jobs", seed=point.seed, jobset=point.workload.get("path"))
        if machine is not None:
            base.update(machine_fields(machine))
        config: dict[str, Any] = dict(base)
    else:
        params = dict(point.scheduler["params"])
        base.update(scheduler=point.scheduler["name"], params=dumps(params), seed=point.seed)
        if machine is not None:
            base.update(machine_fields(machine), machine_config=dumps(mconfig))
        precision = point.sample_precision
        config = run_config(
            None if "trace" not in resolved else str(resolved["trace"]),
            None,  # as run() records a machine given resolved, not by name
            {},
            point.scheduler["name"],
            params,
            point.seed,
            DEFAULT_WINDOW,
            None,
            point.sample_iterations,
            DEFAULT_SAMPLE_PRECISION if precision is None else precision,
        )
    if mconfig is not None:
        config["machine_resolved"] = mconfig
    # the point's own error is the one to report: a file that cannot be written is skipped
    if not (run_dir / "config.json").exists():
        with contextlib.suppress(SimschedError, OSError):
            write_json_atomic(run_dir / "config.json", config)
    if not (run_dir / "result.json").exists():
        _write_error(run_dir, base, exc, t0)  # the form and the message of run()'s own


def record_killed(point: Point, out_dir: Path, why: BaseException, t0: float) -> None:
    """Write the records of a point whose worker the runner killed while it ran (it did
    not stop within the grace the runner gives, e.g. deep in compiled code), as the point
    would have written them had it stopped: ``config.json`` unless the run wrote it, and a
    ``result.json`` saying ``interrupted`` unless it has one.  The point keeps no row, so
    it stays pending.

    ``why`` is what stopped the runner: Ctrl-C gives "interrupted (Ctrl-C)", anything else
    "terminated (SIGTERM)", the signal the runner sent its workers; ``t0`` is when the
    point was handed to the worker (:func:`time.perf_counter`).
    """
    from pydantic import ValidationError

    from simsched.machine import Machine

    run_dir = point_dir(out_dir, point.id)
    ctrl_c = isinstance(why, KeyboardInterrupt) and not isinstance(why, Terminated)
    stop = KeyboardInterrupt() if ctrl_c else Terminated()
    resolved: dict[str, Any] = {}
    with contextlib.suppress(ValidationError, KeyError, TypeError):
        resolved["machine"] = Machine.model_validate(point.machine["resolved"])
    with contextlib.suppress(SimschedError, OSError):  # the runner's own stop goes on
        if not run_dir.is_dir():
            return
        # under the point's claim: another runner may have taken the point since the
        # killed worker's lock went with it, and its files are then its own
        with PointClaim(out_dir, point.id) as claim:
            if claim.acquire(note=False):
                _write_early_failure(point, run_dir, resolved, stop, t0)


def _simulate_jobs(point: Point, machine: Any, run_dir: Path) -> dict[str, Any]:
    """A job-set point: every job under the point's scheduler, the record flattened for
    the store (nested values as canonical JSON text, see NESTED_FIELDS)."""
    import simsched
    from simsched.canonical import canonical_json
    from simsched.jobset import load_jobset

    w = point.workload
    js = load_jobset(
        Path(point.spec_dir) / w["path"],
        seed=point.seed,
        cache_dir=point.trace_cache,
        scheduler=point.scheduler["name"],
        scheduler_params=dict(point.scheduler["params"]),
    )
    res = simsched.run_jobs(
        js, machine, controller=w.get("controller"), quantum=w.get("quantum"), out_dir=run_dir
    )
    rec = dict(res.record)
    rec["scheduler"] = point.scheduler["name"]
    # the generators of its job groups, which run_jobs does not know, when they are plug-ins
    from simsched.jobset import jobset_generator_recipes

    made = jobset_generator_recipes(Path(point.spec_dir) / w["path"])
    _note_generators(rec, res.record, run_dir, [r["generator"] for r in made])
    return {k: canonical_json(v) if isinstance(v, dict | list) else v for k, v in rec.items()}


def resolve_point_function(name: str | None) -> PointFunction | None:
    """Import ``module:function`` (``None`` gives ``None``: the default simulation).

    Raises
    ------
    ConfigError
        The name is malformed, the module does not import or has no such function.
    """
    if name is None:
        return None
    given = spelled(f"name={shown(name)}", f"--point-fn {name!r}")
    if not isinstance(name, str):
        raise ConfigError(f"{given}: expected MODULE:FUNCTION (a text), or None")
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{given}: expected MODULE:FUNCTION")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ConfigError(f"{given}: cannot import {module}: {exc}") from None
    except AttributeError:
        raise ConfigError(f"{given}: {module} has no {attr}") from None
    if not callable(fn):
        raise ConfigError(f"{given}: not a function")
    return fn


#: Status of a point that could not finish for want of disk space: no row is written, so
#: the point stays pending and the next ``sweep run`` runs it (no ``--retry-failed``).
INTERRUPTED = "interrupted"

_OUT_OF_SPACE = (errno.ENOSPC, errno.EDQUOT)


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from or during) is a full disk or an
    exhausted quota: a fault of the host, not of the point."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if getattr(cur, "errno", None) in _OUT_OF_SPACE:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def error_row(point: Point, message: str, wall_s: float = 0.0) -> dict[str, Any]:
    """The row of a point that failed before or outside its point function."""
    return {**point.columns(), "status": "error", "error": message, "point_wall_s": wall_s}


def is_stale(row: dict[str, Any]) -> bool:
    """Whether a finished row was simulated by source other than the running code's: its
    ``code_identity`` differs from :func:`simsched.identity.results_identity`, or a
    plug-in it used has other source now (:func:`simsched.plugins.plugins_changed`).  A
    row without a ``code_identity`` (a custom point function's, or simsched before 0.1.1)
    is not known to be stale and counts as current."""
    from simsched.identity import results_identity
    from simsched.plugins import PLUGIN_FIELD, plugins_changed

    ident = row.get("code_identity")
    if ident is None:
        return False
    return ident != results_identity() or plugins_changed(row.get(PLUGIN_FIELD))


def trace_changed(point: Point, row: dict[str, Any] | None) -> bool:
    """Whether a finished point names a trace file that now holds another trace.

    A point is identified by its recipe, and for a trace file that is its path: a file
    replaced since the row was made (a new capture under the old name) would otherwise
    keep its old row beside rows of the new trace.  Only the file's header is read (its
    digest); a file that is gone or unreadable is left for the run to report.
    """
    from simsched.trace.format import HEADER_SIZE, unpack_header
    from simsched.trace.recipes import trace_file

    w = point.workload
    if row is None or row.get("status") != "ok" or w.get("kind") != "trace":
        return False
    path = trace_file(w, point.spec_dir)
    try:
        with open(path, "rb") as f:
            digest = unpack_header(f.read(HEADER_SIZE), str(path))["digest"].hex()
    except (OSError, SimschedError):
        return False
    recorded = row.get("trace_digest")
    return isinstance(recorded, str) and recorded != digest


#: Columns naming a point as the spec labels it, and the sweep's name: the point id leaves
#: them out, so a renamed entry finds its finished points (:func:`relabel_row`).
LABEL_COLUMNS = ("sweep", "workload", "machine", "scheduler")


def relabel_row(out_dir: str | Path, point: Point, row: dict[str, Any]) -> dict[str, Any]:
    """A finished point's row with the labels the spec gives the point now, rewritten when
    they changed.  The row kept the labels of the run that made it: after a renamed entry
    a table and its figures showed one entry under two labels (its finished points under
    the old one, its new points under the new one)."""
    cols = point.columns()
    changed = {k: cols[k] for k in LABEL_COLUMNS if k in row and row[k] != cols[k]}
    if not changed:
        return row
    new = dict(row)
    for key, label in changed.items():
        run_key = f"run.{key}"
        if run_key not in new and key in ("machine", "scheduler") and "record_version" in new:
            # a simsched record's machine name or scheduler, merged into the old label when
            # equal to it: kept beside the new label as merge_row would keep it
            new[run_key] = new[key]
        new[key] = label
        if new.get(run_key) == label:
            del new[run_key]
    save_row(out_dir, point.id, new)
    return new


def is_finished(
    row: dict[str, Any] | None,
    retry_failed: bool = False,
    rerun_stale: bool = False,
    changed: bool = False,
) -> bool:
    """Whether a point with this row (None: no row) is done and is not to be run again
    (``changed``: its trace file holds another trace since, :func:`trace_changed`)."""
    if row is None or changed:
        return False
    if row.get("status") != "ok":
        return not retry_failed
    return not (rerun_stale and is_stale(row))


def _point_record(result: Any) -> dict[str, Any]:
    """A point function's return value as a record: a mapping with string keys, else a
    ``TypeError`` naming what came back, which fails the point.  Non-string keys used to
    pass here and crash the runner itself when it wrote the row."""
    if not isinstance(result, Mapping):
        raise TypeError(
            f"the point function returned {type(result).__name__}, "
            "expected a dict of metrics (str keys)"
        )
    bad = next((k for k in result if not isinstance(k, str)), None)
    if bad is not None:
        raise TypeError(
            f"the point function returned a dict with the key {bad!r} "
            f"({type(bad).__name__}); its keys become column names, so they must be str"
        )
    # a table column holds 64-bit integers: such a row, written as finished, was left out
    # of every table (with a warning) and never run again
    big = beyond_int64(result)
    if big is not None:
        raise TypeError(
            f"the point function returned {big}={result[big]}, beyond a 64-bit integer; "
            "give a float or a string"
        )
    # the table's text is UTF-8: a lone surrogate (a byte that is not UTF-8, as Python
    # reads a file name) failed there with a traceback, in this sweep and every later
    # `results show` of its folder
    text = not_utf8(result)
    if text is not None:
        raise TypeError(
            f"the point function returned {text!r}={shown(result[text])}: text that is not "
            "UTF-8 (a lone surrogate), which no table column holds"
        )
    return dict(result)


def _host_columns() -> dict[str, float]:
    """What a point's row says of the host, taken just before the point runs: the load
    average and :func:`simsched.host.speed_reference`."""
    loop, gather, _ = speed_reference()
    return {
        "point_loadavg_1m": round(os.getloadavg()[0], 2),
        "host_python_ms": loop,
        "host_gather_ms": gather,
    }


def _error_record(exc: Exception) -> dict[str, Any]:
    """A failed point's row fields: a user's mistake (a :class:`SimschedError`) by its
    message alone, as ``result.json`` gives it; an internal error with its type and the
    last frames of its traceback (docs/results.md)."""
    if isinstance(exc, SimschedError):
        return {"status": "error", "error": str(exc) or type(exc).__name__}
    tb = traceback.format_exception(exc)
    return {
        "status": "error",
        "error": described(exc),
        "traceback": "".join(tb[-6:]),
    }


def execute_point(
    point_data: dict[str, Any],
    out_dir: str | os.PathLike,
    point_fn: PointFunction | None = None,
    retry_failed: bool = False,
    rerun_stale: bool = False,
) -> tuple[dict[str, Any] | None, bool]:
    """Run one point unless it has finished; see the module docstring for the steps.

    Parameters
    ----------
    point_data
        :meth:`Point.to_dict` of the point.
    out_dir
        The sweep's output folder.
    point_fn
        Runs the simulation and returns the record; default :func:`simulate_point`.
    retry_failed
        Run again a point whose row says it failed.
    rerun_stale
        Run again a point whose row was made by other simsched or plug-in code (:func:`is_stale`).

    Returns
    -------
    (row, ran)
        The point's row, and whether it ran now (``False`` when it was already finished);
        ``(None, False)`` when another runner holds the point's claim (it is running it).
        A row with ``status`` :data:`INTERRUPTED` was not written (the disk was full).

    Raises
    ------
    ConfigError
        ``point_data`` is not a point's dict (:meth:`Point.from_dict`), ``out_dir`` not a
        path, ``point_fn`` not a function, or a flag not True or False.
    """
    point = Point.from_dict(point_data, "point_data")
    folder = check_path(out_dir, "out_dir")
    check_callable(point_fn, "point_fn")
    retry_failed = check_flag(retry_failed, "retry_failed")
    rerun_stale = check_flag(rerun_stale, "rerun_stale")

    def finished() -> dict[str, Any] | None:
        old = read_row(folder, point.id)
        changed = trace_changed(point, old)
        return old if is_finished(old, retry_failed, rerun_stale, changed) else None

    old = finished()
    if old is not None:
        return old, False
    with PointClaim(folder, point.id) as claim:
        if not claim.acquire():
            return None, False  # another runner is on it right now
        old = finished()  # it may have finished while we were getting here
        if old is not None:
            return old, False
        pdir = point_dir(folder, point.id)
        remove_temporaries(folder, point.id)  # of a run of this point killed mid-write
        fn = point_fn or simulate_point
        try:
            # before point.json: an interrupt between the two left a folder of point.json
            # alone, with no record of the run
            host = _host_columns()
            write_json_atomic(pdir / POINT_FILE, point_data, sort_keys=False)
            t0, cpu0 = time.perf_counter(), process_cpu_s()
            try:
                # a point names its spec's keys, whether it runs in a worker or here
                with command_line(False):
                    record = _point_record(fn(point, pdir))
                record.setdefault("status", "ok")
            except Exception as exc:  # one failing point never stops the sweep: record it
                if out_of_space(exc):
                    raise
                record = _error_record(exc)
            except SystemExit as exc:
                # sys.exit() in a point function ended the whole sweep with its status (0:
                # as if all went well), its points left undone and nothing said
                record = _error_record(
                    TypeError(
                        f"the point function called sys.exit({exc.code!r}); raise an "
                        "exception to fail a point"
                    )
                )
            wall = time.perf_counter() - t0
            # the process's CPU: on a Dask worker of several threads, its other points' too
            cost = {**host, "point_cpu_s": round(process_cpu_s() - cpu0, 3)}
            row = write_row(folder, point.id, point.columns(), record, wall, cost)
        except Exception as exc:
            if not out_of_space(exc):
                raise
            # The host's fault, not the point's, whichever file met it (the point's own or
            # the runner's point.json and row.json): no row, so the point stays pending and
            # reruns once there is space.
            return {**point.columns(), "status": INTERRUPTED, "error": str(exc)}, True
    return row, True
