"""Running a sweep: which points run, resumably, one row per point, and the report.

:func:`run_sweep` checks the spec once (every trace recipe, the trace cache), keeps the
points that have a finished row (:func:`pending_points`: a rerun resumes where the last one
stopped, and points of known cost start longest first), hands the others to an executor
(:mod:`simsched.experiments.executors`), each to run through
:func:`~simsched.experiments.point.execute_point`, waits for points another runner of the
same sweep holds, and rebuilds the sweep's Parquet table from the rows.

Progress (done, failed, running, ETA) is a rich bar at a terminal; in a log file or a pipe it
is a plain line whenever points have finished, at most one every 10 s.
"""

from __future__ import annotations

import functools
import math
import pickle
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
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

from simsched.errors import ConfigError, OutputError, spelled
from simsched.experiments.claims import claim_holder
from simsched.experiments.executors import close_dask, connect_dask, run_dask, run_local
from simsched.experiments.point import (
    INTERRUPTED,
    PointFunction,
    execute_point,
    is_finished,
    is_stale,
    out_of_space,
    relabel_row,
    trace_changed,
)
from simsched.experiments.spec import (
    LoadedSpec,
    Point,
    check_loaded,
    check_spec,
    check_trace_cache,
)
from simsched.experiments.store import ROW_FILE, consolidate, read_row
from simsched.files import check_output_dir, make_output_dir
from simsched.params import check_flag, check_int
from simsched.trace.reader import keep_bytes

# Seconds between two looks at points another runner of the same sweep is running.
WAIT_POLL_S = 0.5

#: Most worker processes (local) or Dask workers (local cluster) a sweep may ask for: more
#: than any host has cores, each one a process that loads the simulator's kernels (and, in
#: the local executor, a pool of its own holding 8 of the runner's open files).
#: ``--workers 2^31`` once raised OverflowError with a traceback.
MAX_WORKERS = 1024


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
    stale: int = 0  # finished points kept although other simsched or plug-in code simulated them
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
        Function that runs one point (default
        :func:`~simsched.experiments.point.simulate_point`); must be picklable.
    retry_failed
        Also rerun points whose row records an error.
    rerun_stale
        Also rerun finished points simulated by other simsched or plug-in code
        (:func:`~simsched.experiments.point.is_stale`); without it they are kept and counted
        in :attr:`SweepReport.stale`.
    progress
        Report progress on stderr: a bar at a terminal, else a plain line when points have
        finished, at most one every :data:`simsched.progress.LINE_INTERVAL_S` seconds.
    console
        rich console for the progress display (its terminal or not decides which).
    points
        Run only these points (default: all unfinished points of the spec).

    Returns
    -------
    SweepReport

    Raises
    ------
    ConfigError
        Unknown executor, ``address`` without the dask executor, unreachable scheduler,
        or a ``point_fn`` the local executor's worker processes cannot import.
    """
    check_loaded(loaded)
    workers = check_int("workers", workers, 0, MAX_WORKERS)
    retry_failed = check_flag(retry_failed, "retry_failed")
    rerun_stale = check_flag(rerun_stale, "rerun_stale")
    progress = check_flag(progress, "progress")
    if address is not None and not isinstance(address, str):
        raise ConfigError(f"address={address!r}: expected a string tcp://HOST:PORT")
    if not isinstance(executor, str) or executor not in ("local", "dask"):
        given = spelled(f"executor={executor!r}", f"--executor {executor!r}")
        raise ConfigError(f"{given}: use local or dask")
    if executor == "dask" and address is None and workers == 0:
        # It started a cluster of one worker without a word.
        raise ConfigError(
            spelled("workers=0", "--workers 0")
            + " runs the points in this process, which the local executor does; "
            "a local Dask cluster needs at least 1 worker"
        )
    if point_fn is not None and not callable(point_fn):
        raise ConfigError(f"point_fn={point_fn!r}: expected a function of one point")
    if point_fn is not None and executor == "local" and workers > 0:
        check_importable(point_fn)
    if console is not None and not isinstance(console, Console):
        raise ConfigError(f"console={console!r}: expected a rich Console or None")
    if points is not None:
        if isinstance(points, str | bytes) or not isinstance(points, Iterable):
            raise ConfigError(f"points={points!r}: expected points of the spec (loaded.points())")
        points = list(points)
        stray = next((p for p in points if not isinstance(p, Point)), None)
        if stray is not None:
            raise ConfigError(f"points: {stray!r} is not a point of the spec (loaded.points())")
        # another spec's points (or this one's under other --set edits) ran into this
        # sweep's folder, and its table then held rows the spec does not have
        ids = {p.id for p in loaded.points()}
        foreign = next((p for p in points if p.id not in ids), None)
        if foreign is not None:
            raise ConfigError(
                f"points: {foreign.columns()['workload']} / {foreign.columns()['machine']} / "
                f"{foreign.columns()['scheduler']} / seed {foreign.seed} is not a point of "
                f"{loaded.path} as loaded (loaded.points())"
            )
    if address and executor != "dask":
        raise ConfigError(
            spelled(f"address={address!r} needs executor='dask'", "--address needs --executor dask")
        )
    if address and not re.match(
        r"^(tcp|tls|ucx|ws|wss)://(\[[0-9a-fA-F:]+\]|[^\s/:\[\]]+)(:\d+)?/?$", address
    ):
        given = spelled(f"address={address!r}", f"--address {address!r}")
        raise ConfigError(f"{given}: expected tcp://HOST:PORT")
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
        check_trace_cache(loaded, todo, sizes=executor != "dask")
    finished = len(done)
    # The scheduler is reached before the output folder is made: an unreachable one leaves
    # no empty folder behind.
    connection = connect_dask(address, workers) if executor == "dask" and todo else None
    # Until run_dask takes the connection over (it closes it however it ends), a failure
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
            close_dask(*connection, interrupted=False)
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
                run_local(todo, out_dir, workers, point_fn, redo, on_row, on_running)
            else:
                run_dask(todo, out_dir, connection, point_fn, redo, on_row, on_running)
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


def check_importable(point_fn: PointFunction) -> None:
    """Refuse a point function that the local executor's worker processes cannot import.

    The workers are started fresh (``spawn``) and receive the function pickled, that is by
    module and name: a lambda or a function defined inside another failed with a pickling
    error only once the first point was handed over, and one defined in a notebook or at
    the interactive prompt (its module ``__main__`` has no file to import again) killed
    worker after worker.

    Raises
    ------
    ConfigError
        One line naming the function, and ``workers=0`` as the way to run it as it is.
    """
    main = sys.modules.get("__main__")
    inner: Any = point_fn
    while isinstance(inner, functools.partial):  # pickled by reference to what it wraps
        inner = inner.func
    interactive = getattr(inner, "__module__", None) == "__main__" and not getattr(
        main, "__file__", None
    )
    try:
        pickle.dumps(point_fn)
    except Exception:  # whatever the object's pickling raises, a worker cannot receive it
        pass
    else:
        if not interactive:
            return
    name = getattr(inner, "__qualname__", None) or type(inner).__name__
    if inner is not point_fn:  # name what the partial wraps, the thing to move
        name = f"partial({name})"
    raise ConfigError(
        f"point_fn={name}: worker processes cannot import it (a lambda, a function defined "
        "inside another, in a notebook or at the prompt); define it at module level in an "
        "importable module, or give workers=0 to run the points in this process"
    )


def sweep_status(loaded: LoadedSpec) -> dict[str, Any]:
    """Counts of a sweep's points: total, ok, failed, missing, ok ones simulated by other simsched
    code (``stale``, :func:`~simsched.experiments.point.is_stale`), rows of points no longer
    in the spec (``orphans``) and, among the missing, rows made on a trace file that holds
    another trace since (``trace_changed``,
    :func:`~simsched.experiments.point.trace_changed`: they run again).  ``running`` lists
    the missing points a runner or worker has claimed and is running now, in the spec's
    order: ``point_id``, the workload's, machine's and scheduler's labels, the seed, and the
    claim's ``pid``, ``host``, ``since`` and ``alive``
    (:func:`~simsched.experiments.claims.claim_holder`; a claim whose holder is gone from
    this host is left out).  Reads only the output folder and the spec's trace files
    (each opened and its content digest checked, once per process); runs nothing.  An output folder that :func:`run_sweep` could not create is refused as it
    refuses it (``OutputError``)."""
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
