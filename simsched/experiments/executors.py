"""Where a sweep's points run: local worker processes or a Dask cluster.

Executors only decide *where* :func:`~simsched.experiments.point.execute_point` runs; the
runner (:mod:`simsched.experiments.runner`) gives them the points to run and a callback for
each row.

* ``local`` (:func:`run_local`): a :class:`concurrent.futures.ProcessPoolExecutor` with the
  ``spawn`` start method (no forked Numba or thread state).  A worker that dies (crash, out
  of memory) breaks the pool; the runner starts a new one and resubmits the unfinished
  points.  Those that were running when it died run again one at a time first, so that a
  death is put down to the point that caused it, not to its neighbours: a point is
  recorded as failed after two deaths, the last with it running alone.
  Workers ignore Ctrl-C (the runner stops them within :data:`STOP_GRACE_S`) and end when
  their runner dies, even by SIGKILL.
* ``dask`` (:func:`connect_dask`, :func:`run_dask`): ``dask.distributed``; an existing
  scheduler (``address``) or a :class:`~dask.distributed.LocalCluster`.  Tasks carry recipes
  only; the scheduler reruns the tasks of a lost worker elsewhere, and the point's own
  check for a finished row makes that rerun idempotent.  Rows come back to the client,
  which also writes them if the workers do not share the output folder.

The standard library's pool and Dask are used as they are; what is written here is the
signal handling around them, which neither gives: a Ctrl-C that reaches only the runner, a
worker that notices its runner's death, and a pool rebuilt after a worker crash.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from simsched.errors import ConfigError
from simsched.experiments.point import (
    INTERRUPTED,
    PointFunction,
    error_row,
    execute_point,
)
from simsched.experiments.spec import Point
from simsched.experiments.store import POINT_FILE, point_dir, read_row, save_row

# Deaths of a worker process while a point was running before the point is marked failed;
# the last of them with the point running alone (a point running beside others when a
# worker dies is run again alone first).
MAX_CRASHES = 2


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
    """:func:`~simsched.experiments.point.execute_point` in a pool worker: none starts once the
    runner is gone, and a point cut short by the runner's death ends the worker (the pool
    would otherwise catch the exit and hand it the next queued point)."""
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


def run_local(
    todo: list[Point],
    out_dir: Path,
    workers: int,
    point_fn: PointFunction | None,
    redo: tuple[bool, bool],
    on_row: Callable[[Point, dict[str, Any] | None, bool], None],
    on_running: Callable[[int], None],
) -> None:
    """Run ``todo`` in local worker processes (``workers`` of them; ``0``: in this process).

    Parameters
    ----------
    todo
        The points to run, in the order they start.
    out_dir
        The sweep's output folder.
    workers
        Worker processes; ``0`` runs the points here, one after the other (no isolation:
        for debugging and tiny sweeps).
    point_fn
        The point function (default :func:`~simsched.experiments.point.simulate_point`).
    redo
        ``(retry_failed, rerun_stale)`` for :func:`~simsched.experiments.point.execute_point`.
    on_row
        Called with each point, its row (``None``: another runner holds it) and whether it
        ran now, as the points finish.
    on_running
        Called with the number of points running, for the progress display.
    """
    if workers <= 0:  # in-process: no isolation, for debugging and tiny sweeps
        for p in todo:
            on_running(1)
            on_row(p, *execute_point(p.to_dict(), str(out_dir), point_fn, *redo))
        return
    crashes: dict[str, int] = {}
    finished: set[str] = set()
    remaining = list(todo)
    # Points that were running beside others when a worker died: each runs again alone,
    # so that a death is put down to the point that caused it, not to its neighbours.
    alone: list[Point] = []
    barren = 0  # pools in a row that died before any of their points started or ended
    ctx = get_context("spawn")
    while remaining or alone:
        isolated = bool(alone)
        batch, size = (alone, 1) if isolated else (remaining, workers)
        if isolated:
            alone = []
        else:
            remaining = []
        by_future = {}
        started, done_before = time.time(), len(finished)
        pool = ProcessPoolExecutor(max_workers=size, mp_context=ctx, initializer=_worker_init)
        try:
            with _sigint_ignored():  # workers start here and inherit the ignored Ctrl-C
                for p in batch:
                    fut = pool.submit(
                        _pool_execute_point, p.to_dict(), str(out_dir), point_fn, *redo
                    )
                    by_future[fut] = p
            pending = set(by_future)
            broken = False
            while pending:
                on_running(min(size, len(pending)))
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
        if not broken:
            barren = 0
            continue
        # The pool died: every point without a row runs again in a new pool.  A point
        # was running when its point.json was written by this pool.
        left = [p for p in by_future.values() if p.id not in finished]
        running = [p for p in left if _started_since(out_dir, p, started)]
        running_ids = {p.id for p in running}
        barren = 0 if running or len(finished) > done_before else barren + 1
        if barren >= MAX_CRASHES:
            # Workers that die before any point starts (the point function's module
            # cannot be imported in a fresh process, the host kills every new process)
            # would otherwise be started again for ever.
            raise ConfigError(
                f"the worker processes died {barren} times in a row before running any "
                "point (can a fresh Python process import simsched and the point "
                "function?); --workers 0 runs the points in this process"
            )
        for p in left:
            if p.id not in running_ids:
                (alone if isolated else remaining).append(p)
        for p in running:
            crashes[p.id] = crashes.get(p.id, 0) + 1
            if len(running) == 1 and crashes[p.id] >= MAX_CRASHES:
                # It ran alone this time: the death was its own.
                row = error_row(p, "the worker process died while running this point")
                save_row(out_dir, p.id, row)
                on_row(p, row, True)
            else:
                alone.append(p)


def _started_since(out_dir: Path, point: Point, since: float) -> bool:
    """Whether ``point`` started at or after ``since`` (its ``point.json`` written then)."""
    marker = point_dir(out_dir, point.id) / POINT_FILE
    return marker.is_file() and marker.stat().st_mtime >= since


def connect_dask(address: str | None, workers: int) -> tuple[Any, Any]:
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


def close_dask(client: Any, cluster: Any, interrupted: bool) -> None:
    """Close a client from :func:`connect_dask` and the local cluster it owns (if any)."""
    with _sigint_ignored():
        with contextlib.suppress(Exception):
            client.close(timeout=STOP_GRACE_S)
        if cluster is not None:
            if interrupted:
                _stop_local_dask_workers(cluster)
            with contextlib.suppress(Exception):
                cluster.close(timeout=STOP_GRACE_S)


def run_dask(
    todo: list[Point],
    out_dir: Path,
    connection: tuple[Any, Any],
    point_fn: PointFunction | None,
    redo: tuple[bool, bool],
    on_row: Callable[[Point, dict[str, Any] | None, bool], None],
    on_running: Callable[[int], None],
) -> None:
    """Run ``todo`` on the Dask ``connection`` of :func:`connect_dask`, then close it."""
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
        close_dask(client, cluster, interrupted)


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
