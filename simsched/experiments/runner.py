"""Running a sweep: local worker processes or a Dask cluster, resumable, one row per point.

The unit of work is :func:`execute_point`: given a point (a small JSON-able dict: recipes and
the resolved machine, never trace data), the sweep's output folder and a *point function*, it

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
without simulating.  Executors only decide *where* ``execute_point`` runs:

* ``local``: a :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn`` start
  method (no forked Numba or thread state).  A worker that dies (crash, out of memory) breaks
  the pool; the runner starts a new one and resubmits the unfinished points, and a point that
  was running during two such deaths is recorded as failed.
* ``dask``: ``dask.distributed``; an existing scheduler (``address``) or a
  :class:`~dask.distributed.LocalCluster`.  Tasks carry recipes only; the scheduler reruns the
  tasks of a lost worker elsewhere, and step 1 makes that rerun idempotent.  Rows come back to
  the client, which also writes them if the workers do not share the output folder.

Progress (done, failed, running, ETA) is a rich bar at a terminal; in a log file or a pipe it
is a plain line whenever points have finished, at most one every 10 s.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import math
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simsched.errors import ConfigError, OutputError, SimschedError
from simsched.experiments.spec import (
    LoadedSpec,
    Point,
    check_loaded,
    check_spec,
    check_trace_cache,
)
from simsched.experiments.store import (
    POINT_FILE,
    ROW_FILE,
    PointClaim,
    beyond_int64,
    claim_holder,
    consolidate,
    point_dir,
    read_row,
    remove_temporaries,
    save_row,
    write_row,
)
from simsched.files import check_output_dir, make_output_dir, write_json_atomic
from simsched.params import check_flag, check_int
from simsched.trace.reader import keep_bytes

PointFunction = Callable[[Point, Path], dict[str, Any]]

# Seconds between two looks at points another runner of the same sweep is running.
WAIT_POLL_S = 0.5

# Deaths of a worker process while a point was running before the point is marked failed.
MAX_CRASHES = 2

#: Most worker processes (local) or Dask workers (local cluster) a sweep may ask for: more
#: than any host has cores, each one a process that loads the simulator's kernels.  The
#: local pool's call queue is a semaphore of ``workers + 1`` (a C int): ``--workers 2^31``
#: raised OverflowError with a traceback.
MAX_WORKERS = 1024


def simulate_point(point: Point, run_dir: Path) -> dict[str, Any]:
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
    """
    # A point run again (--retry-failed, --rerun-stale) must not keep an earlier attempt's
    # files beside the new record: a failure before the run wrote them left them standing.
    for name in RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    t0 = time.perf_counter()
    resolved: dict[str, Any] = {}
    try:
        return _simulate(point, run_dir, resolved)
    except BaseException as exc:
        _write_early_failure(point, run_dir, resolved, exc, t0)
        raise


#: The files :func:`simsched.run` and :func:`simsched.run_jobs` write in a point's folder.
RUN_FILES = ("config.json", "result.json", "timeline.npz")


def _simulate(point: Point, run_dir: Path, resolved: dict[str, Any]) -> dict[str, Any]:
    """:func:`simulate_point`'s work; ``resolved`` receives the machine and the trace as
    they are made, for the failure record."""
    from simsched.machine import Machine
    from simsched.trace.recipes import ensure_trace
    from simsched.workloads import generate

    machine = resolved["machine"] = Machine.model_validate(point.machine["resolved"])
    if point.workload.get("kind") == "jobs":
        return _simulate_jobs(point, machine, run_dir)
    trace = ensure_trace(point.workload, point.trace_cache, point.spec_dir, generate=generate)
    resolved["trace"] = trace
    import simsched

    run = getattr(simsched, "run", None)
    if run is None:
        raise RuntimeError("simsched.run is not available in this installation")
    result = run(
        str(trace),
        machine,
        point.scheduler["name"],
        dict(point.scheduler["params"]),
        point.seed,
        out_dir=run_dir,
        sample_iterations=point.sample_iterations,
        **({} if point.sample_precision is None else {"sample_precision": point.sample_precision}),
    )
    return dict(result.record)


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
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"--point-fn {name!r}: expected MODULE:FUNCTION")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ConfigError(f"--point-fn {name!r}: cannot import {module}: {exc}") from None
    except AttributeError:
        raise ConfigError(f"--point-fn {name!r}: {module} has no {attr}") from None
    if not callable(fn):
        raise ConfigError(f"--point-fn {name!r}: not a function")
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
    ``code_identity`` differs from :func:`simsched.identity.results_identity`.  A row
    without one (a custom point function's, or simsched before 0.1.1) is not known to be
    stale and counts as current."""
    from simsched.identity import results_identity

    ident = row.get("code_identity")
    return ident is not None and ident != results_identity()


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
    return dict(result)


def execute_point(
    point_data: dict[str, Any],
    out_dir: str,
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
        Run again a point whose row was made by other simsched code (:func:`is_stale`).

    Returns
    -------
    (row, ran)
        The point's row, and whether it ran now (``False`` when it was already finished);
        ``(None, False)`` when another runner holds the point's claim (it is running it).
        A row with ``status`` :data:`INTERRUPTED` was not written (the disk was full).
    """
    point = Point.from_dict(point_data)

    def finished() -> dict[str, Any] | None:
        old = read_row(out_dir, point.id)
        changed = trace_changed(point, old)
        return old if is_finished(old, retry_failed, rerun_stale, changed) else None

    old = finished()
    if old is not None:
        return old, False
    with PointClaim(out_dir, point.id) as claim:
        if not claim.acquire():
            return None, False  # another runner is on it right now
        old = finished()  # it may have finished while we were getting here
        if old is not None:
            return old, False
        pdir = point_dir(out_dir, point.id)
        remove_temporaries(out_dir, point.id)  # of a run of this point killed mid-write
        fn = point_fn or simulate_point
        try:
            write_json_atomic(pdir / POINT_FILE, point_data, sort_keys=False)
            t0 = time.perf_counter()
            try:
                record = _point_record(fn(point, pdir))
                record.setdefault("status", "ok")
            except Exception as exc:  # one failing point never stops the sweep: record it
                if out_of_space(exc):
                    raise
                tb = traceback.format_exception(exc)
                record = {
                    "status": "error",
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": "".join(tb[-6:]),
                }
            row = write_row(out_dir, point.id, point.columns(), record, time.perf_counter() - t0)
        except Exception as exc:
            if not out_of_space(exc):
                raise
            # The host's fault, not the point's, whichever file met it (the point's own or
            # the runner's point.json and row.json): no row, so the point stays pending and
            # reruns once there is space.
            return {**point.columns(), "status": INTERRUPTED, "error": str(exc)}, True
    return row, True


@dataclass
class SweepReport:
    """What a sweep run did."""

    out_dir: Path
    total: int
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    wall_s: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    interrupted: list[tuple[str, str]] = field(default_factory=list)  # left pending (disk full)
    elsewhere: int = 0  # points another runner was running when this one reached them
    stale: int = 0  # finished points kept although other simsched code simulated them
    # of the skipped points, those whose row records a failure (also counted in failed)
    failed_before: int = 0
    table_error: str = ""  # why results.parquet could not be written (a full disk), or ""


class _Display:
    """A sweep's progress on stderr: at a terminal a rich bar (done, failed, running,
    ETA); elsewhere (a log file, a pipe) a plain line whenever points have finished, at
    most one every :data:`simsched.progress.LINE_INTERVAL_S`, as :mod:`simsched.progress`
    reports a run.  rich draws its bar there only once, at the end: a study of hours run
    with its output in a log said nothing of its progress until it had finished."""

    def __init__(self, total: int, enabled: bool, console: Console | None) -> None:
        console = console or Console(stderr=True)
        self.plain = enabled and not console.is_terminal
        self.file = console.file
        self.total = total
        self.progress = Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}  running {task.fields[running]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            disable=not enabled or self.plain,
            transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, failed=0, running=0)
        self._t0 = self._last = time.monotonic()
        self._shown: tuple[int, int] | None = None

    def __enter__(self) -> _Display:
        self.progress.__enter__()
        if self.plain:
            self._shown = (-1, -1)  # the first count after the interval is shown
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.__exit__(exc_type, exc, tb)

    def update(self, done: int, failed: int, running: int) -> None:
        self.progress.update(self.task, completed=done, failed=failed, running=running)
        if not self.plain or self._shown == (done, failed):
            return
        from simsched.progress import LINE_INTERVAL_S, plural

        now = time.monotonic()
        if now - self._last < LINE_INTERVAL_S:
            return
        self._last, self._shown = now, (done, failed)
        print(
            f"sweep: {done}/{plural(self.total, 'point')} done, {failed} failed, "
            f"{running} running ({now - self._t0:.0f} s)",
            file=self.file,
            flush=True,
        )


def pending_points(
    loaded: LoadedSpec,
    retry_failed: bool = False,
    points: list[Point] | None = None,
    rerun_stale: bool = False,
) -> tuple[list[Point], list[tuple[Point, dict[str, Any]]]]:
    """Points of a sweep (default: all of the spec's) still to run, and the finished ones
    with their rows (each row read once).

    The points to run keep the spec's order, except that those whose earlier run left a
    row with its wall time (a stale point rerun with ``rerun_stale``, a failed one retried,
    one whose trace changed) come after the others, longest first: a study rerun after a
    code change then starts its longest points first, so that on many workers none of
    them starts last (the LAWS study on 16 workers: 0.70 h against 0.92 h in the spec's
    order, docs/experiments.md).
    """
    points = loaded.points() if points is None else points
    todo: list[Point] = []
    done: list[tuple[Point, dict[str, Any]]] = []
    cost: dict[str, float] = {}
    for p in points:
        row = read_row(loaded.out_dir, p.id)
        if row is not None and is_finished(row, retry_failed, rerun_stale, trace_changed(p, row)):
            done.append((p, row))
        else:
            todo.append(p)
            wall = row.get("point_wall_s") if row is not None else None
            if isinstance(wall, int | float) and not isinstance(wall, bool) and wall >= 0:
                cost[p.id] = float(wall)
    # a stable sort: points of unknown cost keep the spec's order ahead of the known ones
    todo.sort(key=lambda p: -cost[p.id] if p.id in cost else -math.inf)
    return todo, done


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore Ctrl-C in this process for the block (main thread only; else a no-op).

    Worker processes are started inside such a block: a child inherits the ignored signal
    through ``exec``, so a Ctrl-C in the terminal (sent to the whole process group) reaches
    only the runner, which stops the workers itself — no worker prints a traceback, not even
    one still starting.  Cleanup after an interrupt runs inside one too, so a second Ctrl-C
    cannot break it half-way (it takes at most :data:`STOP_GRACE_S`).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


# Seconds a worker gets to leave cleanly (temporary files removed) before it is killed.
STOP_GRACE_S = 2.0


# Seconds between two looks of a worker at whether the runner that started it still lives.
PARENT_POLL_S = 0.5


class _RunnerGone(SystemExit):
    """Raised in a worker whose runner died: unwinds the point (claim released, temporary
    files removed) and ends the process quietly."""


def _watch_runner(runner_pid: int) -> None:
    """Thread of a worker: when the runner dies (even by SIGKILL), end this process.

    Without it a worker outlives a killed runner: every worker holds the write end of the
    pool's call queue too, so its read never sees end-of-file; it finishes the queued
    points and then waits under PID 1 for ever.  The worker is re-parented when its runner
    dies, so its parent pid changes.  SIGTERM first (the point unwinds cleanly); the process
    ends regardless :data:`STOP_GRACE_S` later, e.g. when it is deep in compiled code.
    """
    while os.getppid() == runner_pid:
        time.sleep(PARENT_POLL_S)
    _RUNNER_GONE.set()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(STOP_GRACE_S)
    os._exit(1)


_RUNNER_GONE = threading.Event()

# Set while a worker runs a point: only then does SIGTERM have a point to unwind.
_IN_POINT = threading.Event()


def _worker_init() -> None:
    """Worker set-up: Ctrl-C is the runner's business; SIGTERM unwinds the running point
    (cleans temporaries) or, between points, ends the process at once; the worker ends
    when its runner dies (:func:`_watch_runner`)."""
    import multiprocessing

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def unwind(signum: int, frame: object) -> None:
        if not _IN_POINT.is_set():
            # Starting up or between points: nothing to unwind, and an exception raised
            # here (in the pool's initializer) would print a traceback on the terminal.
            os._exit(1)
        if _RUNNER_GONE.is_set():
            raise _RunnerGone(1)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, unwind)
    parent = multiprocessing.parent_process()
    runner_pid = parent.pid if parent is not None and parent.pid else os.getppid()
    threading.Thread(target=_watch_runner, args=(runner_pid,), daemon=True).start()


def _pool_execute_point(*args: Any) -> tuple[dict[str, Any] | None, bool]:
    """:func:`execute_point` in a pool worker: none starts once the runner is gone, and a
    point cut short by the runner's death ends the worker (the pool would otherwise catch
    the exit and hand it the next queued point)."""
    if _RUNNER_GONE.is_set():
        os._exit(1)
    try:
        _IN_POINT.set()
        return execute_point(*args)
    except _RunnerGone:
        os._exit(1)
    finally:
        _IN_POINT.clear()


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel queued points and stop the running ones within :data:`STOP_GRACE_S`."""
    with _sigint_ignored():
        # No public API lists a pool's processes before Python 3.14's terminate_workers().
        procs = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        _terminate(procs)


def _terminate(procs: list[Any]) -> None:
    """SIGTERM ``procs``, and SIGKILL those still alive after :data:`STOP_GRACE_S`."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)


def _run_local(
    todo: list[Point],
    out_dir: Path,
    workers: int,
    point_fn: PointFunction | None,
    redo: tuple[bool, bool],
    on_row: Callable[[Point, dict[str, Any] | None, bool], None],
    on_running: Callable[[int], None],
) -> None:
    if workers <= 0:  # in-process: no isolation, for debugging and tiny sweeps
        for p in todo:
            on_running(1)
            on_row(p, *execute_point(p.to_dict(), str(out_dir), point_fn, *redo))
        return
    crashes: dict[str, int] = {}
    finished: set[str] = set()
    remaining = list(todo)
    ctx = get_context("spawn")
    while remaining:
        by_future = {}
        started = time.time()
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init)
        try:
            with _sigint_ignored():  # workers start here and inherit the ignored Ctrl-C
                for p in remaining:
                    fut = pool.submit(
                        _pool_execute_point, p.to_dict(), str(out_dir), point_fn, *redo
                    )
                    by_future[fut] = p
            pending = set(by_future)
            broken = False
            while pending:
                on_running(min(workers, len(pending)))
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        row, ran = fut.result()
                    except BrokenProcessPool:
                        broken = True
                    else:
                        finished.add(by_future[fut].id)
                        on_row(by_future[fut], row, ran)
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        remaining = []
        if broken:
            # The pool died: every point that had not produced a row runs again in a new
            # pool; those that were running during MAX_CRASHES deaths are recorded failed.
            for p in by_future.values():
                if p.id in finished:
                    continue
                # A point was running when its point.json was written by this pool.
                marker = point_dir(out_dir, p.id) / POINT_FILE
                if marker.is_file() and marker.stat().st_mtime >= started:
                    crashes[p.id] = crashes.get(p.id, 0) + 1
                if crashes.get(p.id, 0) >= MAX_CRASHES:
                    row = error_row(p, "the worker process died while running this point")
                    save_row(out_dir, p.id, row)
                    on_row(p, row, True)
                else:
                    remaining.append(p)


def _connect_dask(address: str | None, workers: int) -> tuple[Any, Any]:
    """A Dask client (and the local cluster it owns, or None); errors are one line."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError("--executor dask needs Dask: pip install 'simsched[dask]'") from None

    if address:
        print(
            f"connecting to the Dask scheduler at {address} (giving up after "
            f"{DASK_CONNECT_TIMEOUT_S} s)...",
            file=sys.stderr,
        )
        try:
            return Client(address, timeout=f"{DASK_CONNECT_TIMEOUT_S}s"), None
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(
                f"--address {address}: cannot reach a Dask scheduler ({exc})"
            ) from None
    with _sigint_ignored():  # the cluster's processes start here: Ctrl-C is ours to handle
        cluster = LocalCluster(
            n_workers=max(1, workers),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # No dashboard; the scheduler's HTTP routes on a free local port, not 8787 (taken
            # by another cluster, that prints a warning into the sweep's output).
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        )
    return Client(cluster), cluster


# Seconds ``--address`` waits for the scheduler before it gives up.
DASK_CONNECT_TIMEOUT_S = 30


def _close_dask(client: Any, cluster: Any, interrupted: bool) -> None:
    """Close a client from :func:`_connect_dask` and the local cluster it owns (if any)."""
    with _sigint_ignored():
        with contextlib.suppress(Exception):
            client.close(timeout=STOP_GRACE_S)
        if cluster is not None:
            if interrupted:
                _stop_local_dask_workers(cluster)
            with contextlib.suppress(Exception):
                cluster.close(timeout=STOP_GRACE_S)


def _run_dask(
    todo: list[Point],
    out_dir: Path,
    connection: tuple[Any, Any],
    point_fn: PointFunction | None,
    redo: tuple[bool, bool],
    on_row: Callable[[Point, dict[str, Any] | None, bool], None],
    on_running: Callable[[int], None],
) -> None:
    """Run ``todo`` on the Dask ``connection`` of :func:`_connect_dask`, then close it."""
    from concurrent.futures import CancelledError

    from dask.distributed import as_completed

    client, cluster = connection
    futures = {}
    try:
        token = f"{time.time_ns():x}"
        for k, p in enumerate(todo):
            fut = client.submit(
                execute_point,
                p.to_dict(),
                str(out_dir),
                point_fn,
                *redo,
                key=f"simsched-point-{p.id}-{token}",
                pure=False,
                priority=len(todo) - k,  # in todo's order (pending_points: longest first)
            )
            futures[fut] = p
        last = 0.0
        for fut in as_completed(list(futures)):
            p = futures[fut]
            try:
                row, ran = fut.result()
            except CancelledError:  # the cluster went away under us: stop, as for Ctrl-C
                raise KeyboardInterrupt from None
            except Exception as exc:  # e.g. KilledWorker: the point crashed several workers
                row, ran = error_row(p, f"{type(exc).__name__}: {exc}"), True
            if (
                row is not None
                and row.get("status") != INTERRUPTED
                and read_row(out_dir, p.id) is None
            ):
                # workers without the shared output folder
                save_row(out_dir, p.id, row)
            on_row(p, row, ran)
            now = time.monotonic()
            if now - last > 1.0:
                last = now
                try:
                    on_running(sum(len(v) for v in client.processing().values()))
                except Exception:  # the display is best effort; never fail the sweep on it
                    pass
    except BaseException:
        interrupted = True
        if cluster is None:  # a shared scheduler: take our queued points off it
            with _sigint_ignored(), contextlib.suppress(Exception):
                client.cancel(list(futures), force=True)
        raise
    else:
        interrupted = False
    finally:
        _close_dask(client, cluster, interrupted)


def _stop_local_dask_workers(cluster: Any) -> None:
    """Stop the worker processes of our local Dask cluster within :data:`STOP_GRACE_S`.

    A worker busy with a point does not stop when asked, so the cluster's own close times
    out, and then Dask's exit handler waits ten more seconds for it: after Ctrl-C the
    processes are stopped first (SIGTERM, then SIGKILL), and the close is immediate.
    """
    import logging
    import multiprocessing

    # The nannies would restart the stopped workers, and log that they do: neither is wanted.
    logging.getLogger("distributed").setLevel(logging.ERROR)
    for nanny in getattr(cluster, "workers", {}).values():
        with contextlib.suppress(Exception):
            nanny.auto_restart = False
    _terminate([p for p in multiprocessing.active_children() if "Dask" in p.name])


def run_sweep(
    loaded: LoadedSpec,
    *,
    executor: Literal["local", "dask"] = "local",
    workers: int = 1,
    address: str | None = None,
    point_fn: PointFunction | None = None,
    retry_failed: bool = False,
    rerun_stale: bool = False,
    progress: bool = True,
    console: Console | None = None,
    points: Iterable[Point] | None = None,
) -> SweepReport:
    """Run every unfinished point of a sweep and rebuild its Parquet table.

    Parameters
    ----------
    loaded
        The spec (:func:`simsched.experiments.load_spec`).
    executor
        ``"local"`` (worker processes on this host) or ``"dask"``.
    workers
        Local worker processes (``0`` runs in this process), or the size of the local Dask
        cluster when no ``address`` is given.
    address
        ``tcp://HOST:PORT`` of a running Dask scheduler (``dask`` executor only).
    point_fn
        Function that runs one point (default :func:`simulate_point`); must be picklable.
    retry_failed
        Also rerun points whose row records an error.
    rerun_stale
        Also rerun finished points simulated by other simsched code (:func:`is_stale`);
        without it they are kept and counted in :attr:`SweepReport.stale`.
    progress
        Draw a progress bar on stderr.
    console
        rich console for the progress bar.
    points
        Run only these points (default: all unfinished points of the spec).

    Returns
    -------
    SweepReport

    Raises
    ------
    ConfigError
        Unknown executor, ``address`` without the dask executor, unreachable scheduler.
    """
    check_loaded(loaded)
    workers = check_int("workers", workers, 0, MAX_WORKERS)
    retry_failed = check_flag(retry_failed, "retry_failed")
    rerun_stale = check_flag(rerun_stale, "rerun_stale")
    progress = check_flag(progress, "progress")
    if address is not None and not isinstance(address, str):
        raise ConfigError(f"address={address!r}: expected a string tcp://HOST:PORT")
    if executor not in ("local", "dask"):
        raise ConfigError(f"--executor {executor!r}: use local or dask")
    if executor == "dask" and address is None and workers == 0:
        # It started a cluster of one worker without a word.
        raise ConfigError(
            "--workers 0 runs the points in this process, which the local executor does; "
            "a local Dask cluster needs at least 1 worker"
        )
    if point_fn is not None and not callable(point_fn):
        raise ConfigError(f"point_fn={point_fn!r}: expected a function of one point")
    if console is not None and not isinstance(console, Console):
        raise ConfigError(f"console={console!r}: expected a rich Console or None")
    if points is not None:
        if isinstance(points, str | bytes) or not isinstance(points, Iterable):
            raise ConfigError(f"points={points!r}: expected points of the spec (loaded.points())")
        points = list(points)
        stray = next((p for p in points if not isinstance(p, Point)), None)
        if stray is not None:
            raise ConfigError(f"points: {stray!r} is not a point of the spec (loaded.points())")
    if address and executor != "dask":
        raise ConfigError("--address needs --executor dask")
    if address and not re.match(
        r"^(tcp|tls|ucx|ws|wss)://(\[[0-9a-fA-F:]+\]|[^\s/:\[\]]+)(:\d+)?/?$", address
    ):
        raise ConfigError(f"--address {address!r}: expected tcp://HOST:PORT")
    # Every point's trace reader reads it: a bad value is refused once, before any point.
    keep_bytes()
    t0 = time.perf_counter()
    out_dir = loaded.out_dir
    done: list[tuple[Point, dict[str, Any]]] = []
    if points is None:
        checked = check_spec(loaded, generators=point_fn is None)
        todo, done = pending_points(loaded, retry_failed, checked, rerun_stale)
    else:
        todo = list(points)
    if point_fn is None and todo:  # a point function of one's own makes no trace
        check_trace_cache(loaded, todo)
    finished = len(done)
    # The scheduler is reached before the output folder is made: an unreachable one leaves
    # no empty folder behind.
    connection = _connect_dask(address, workers) if executor == "dask" and todo else None
    # Until _run_dask takes the connection over (it closes it however it ends), a failure
    # or Ctrl-C here closes it, so that no local cluster outlives the sweep.
    try:
        make_output_dir(out_dir)
        report = SweepReport(out_dir=out_dir, total=len(todo) + finished, skipped=finished)
        redo = (retry_failed, rerun_stale)
        for p, row in done:
            try:
                row = relabel_row(out_dir, p, row)
            except OutputError as exc:
                if not out_of_space(exc):
                    raise
                # the row keeps its old labels; the next run relabels it
            # Points that failed in an earlier run are still failed: say so (--retry-failed).
            if row.get("status") != "ok":
                report.failed += 1
                report.failed_before += 1
                report.failures.append((p.id, str(row.get("error", ""))))
            elif is_stale(row):
                report.stale += 1
        state = {"done": finished, "running": 0}
        elsewhere: list[Point] = []
        shown = _Display(report.total, progress and bool(todo), console)
    except BaseException:
        if connection is not None:
            _close_dask(*connection, interrupted=False)
        raise

    with shown as display:

        def on_row(point: Point, row: dict[str, Any] | None, ran: bool) -> None:
            if row is None:  # another runner holds the point: wait for it below
                elsewhere.append(point)
                return
            if row.get("status") == INTERRUPTED:  # not done: it runs again next time
                report.interrupted.append((point.id, str(row.get("error", ""))))
                display.update(state["done"], report.failed, state["running"])
                return
            state["done"] += 1
            if ran:
                report.ran += 1
            else:
                report.skipped += 1
            if row.get("status") != "ok":
                report.failed += 1
                report.failed_before += not ran
                report.failures.append((row.get("point_id", point.id), str(row.get("error", ""))))
            display.update(state["done"], report.failed, state["running"])

        def on_running(n: int) -> None:
            state["running"] = n
            display.update(state["done"], report.failed, n)

        if todo:
            if connection is None:
                _run_local(todo, out_dir, workers, point_fn, redo, on_row, on_running)
            else:
                _run_dask(todo, out_dir, connection, point_fn, redo, on_row, on_running)
        report.elsewhere = len(elsewhere)
        while elsewhere:
            # Another runner of this sweep is on these points: wait for its rows, and take
            # over (here, in this process) any point whose runner died without a row.
            on_running(len(elsewhere))
            time.sleep(WAIT_POLL_S)
            waiting, elsewhere[:] = list(elsewhere), []
            for p in waiting:
                on_row(p, *execute_point(p.to_dict(), str(out_dir), point_fn, False))
        on_running(0)
    try:
        consolidate(out_dir)
    except OutputError as exc:
        if not out_of_space(exc):
            raise
        # The table is derived from the rows and any later reader rebuilds a stale one: a
        # full disk here must not hide what the sweep did, nor pass for a bad input.
        report.table_error = str(exc)
    report.wall_s = time.perf_counter() - t0
    return report


def sweep_status(loaded: LoadedSpec) -> dict[str, Any]:
    """Counts of a sweep's points: total, ok, failed, missing, ok ones simulated by other
    simsched code (``stale``, :func:`is_stale`), rows of points no longer in the spec
    (``orphans``) and, among the missing, rows made on a trace file that holds another
    trace since (``trace_changed``, :func:`trace_changed`: they run again).  ``running``
    lists the missing points a runner or worker has claimed and is running now, in the
    spec's order: ``point_id``, the workload's, machine's and scheduler's labels, the
    seed, and the claim's ``pid``, ``host``, ``since`` and ``alive``
    (:func:`~simsched.experiments.store.claim_holder`; a claim whose holder is gone from
    this host is left out).  Reads only the output folder and the trace files' headers;
    runs nothing.  An output folder that :func:`run_sweep` could not create is refused as
    it refuses it (``OutputError``)."""
    check_loaded(loaded)
    # counting every point missing from a folder that can never hold one misled
    check_output_dir(loaded.out_dir)
    points = loaded.points()
    ok = failed = stale = changed = 0
    ids = set()
    running: list[dict[str, Any]] = []
    for p in points:
        ids.add(p.id)
        row = read_row(loaded.out_dir, p.id)
        if row is None:
            holder = claim_holder(loaded.out_dir, p.id)
            if holder is not None and holder["alive"] is not False:
                running.append(
                    {
                        "point_id": p.id,
                        "workload": p.workload["label"],
                        "machine": p.machine["label"],
                        "scheduler": p.scheduler["label"],
                        "seed": p.seed,
                        **holder,
                    }
                )
            continue
        if trace_changed(p, row):
            changed += 1
        elif row.get("status") == "ok":
            ok += 1
            stale += is_stale(row)
        else:
            failed += 1
    root = loaded.out_dir / "points"
    orphans = 0
    if root.is_dir():
        orphans = sum(1 for d in root.iterdir() if d.name not in ids and (d / ROW_FILE).is_file())
    return {
        "sweep": loaded.spec.name,
        "out": str(loaded.out_dir),
        "total": len(points),
        "ok": ok,
        "failed": failed,
        "missing": len(points) - ok - failed,
        "stale": stale,
        "trace_changed": changed,
        "orphans": orphans,
        "running": running,
    }
