"""Where a sweep's points run: local worker processes or a Dask cluster.

Executors only decide *where* :func:`~simsched.experiments.point.execute_point` runs; the
runner (:mod:`simsched.experiments.runner`) gives them the points to run and a callback for
each row.

* ``local`` (:func:`run_local`): one :class:`concurrent.futures.ProcessPoolExecutor` of a
  single process per worker, with the ``spawn`` start method (no forked Numba or thread
  state).  A worker that dies (crash, out of memory) breaks its own pool only, so the
  death is the point it was running, never its neighbours': the runner starts a new
  worker in its place and runs the point again.  A point is recorded as failed when its
  worker died twice, the last time with no other point running while it ran (a point that
  died twice beside others runs once more alone, as it may have died of their memory).
  One shared pool would break as a whole, leaving every point that ran beside the dead
  one to be run again, one at a time to learn which one killed it.
  Workers ignore Ctrl-C (the runner stops them within :data:`STOP_GRACE_S`) and end when
  their runner dies, even by SIGKILL.
* ``dask`` (:func:`connect_dask`, :func:`run_dask`): ``dask.distributed``; an existing
  scheduler (``address``) or a :class:`~dask.distributed.LocalCluster`.  Tasks carry recipes
  only; the scheduler reruns the tasks of a lost worker elsewhere, and the point's own
  check for a finished row makes that rerun idempotent.  Rows come back to the client,
  which also writes them if the workers do not share the output folder.

The standard library's pool and Dask are used as they are; what is written here is the
signal handling around them, which neither gives: a Ctrl-C that reaches only the runner, a
worker that notices its runner's death, and a worker replaced after it crashed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from simsched.errors import ConfigError, Terminated, described, spelled
from simsched.experiments.point import (
    INTERRUPTED,
    PointFunction,
    error_row,
    execute_point,
    record_killed,
)
from simsched.experiments.spec import Point
from simsched.experiments.store import POINT_FILE, ROW_FILE, point_dir, read_row, save_row

# Deaths of the worker process running a point before the point is recorded as failed
# (the last of them with no other point running).
MAX_CRASHES = 2
# Deaths of worker processes before the point handed to them started, per worker and in a
# row (no point started or finished meanwhile), before the sweep stops: a fresh process
# cannot run points at all.
MAX_BARREN_STARTS = 2
# Open files a worker slot holds in the runner: its pool's call, result and wake-up pipes and
# the worker's sentinel (measured 8 per pool), with a margin for the rest of the runner.
FDS_PER_WORKER = 8
FDS_SPARE = 64


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
        # The runner stops its points by the signal that stopped it (_stop_pools): SIGTERM,
        # or SIGUSR1 for Ctrl-C, which the workers ignore; the point's record says which.
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    signal.signal(signal.SIGTERM, unwind)
    signal.signal(signal.SIGUSR1, unwind)
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


def _stop_pools(
    pools: list[ProcessPoolExecutor], why: BaseException | None = None
) -> list[ProcessPoolExecutor]:
    """Cancel queued points and stop the running ones within :data:`STOP_GRACE_S`, with
    SIGUSR1 when ``why`` is Ctrl-C (their records say "interrupted (Ctrl-C)") and SIGTERM
    otherwise ("terminated (SIGTERM)").  Returns the pools whose worker had to be killed
    (it did not stop in time, e.g. deep in compiled code) and so wrote no record.

    The pools' threads are joined here too, with Ctrl-C still ignored: left to the
    interpreter's exit, a second Ctrl-C landing while it joins them ended the process by
    the signal instead of with status 130.
    """
    with _sigint_ignored():
        owner = {}
        for pool in pools:
            # No public API lists a pool's processes before Python 3.14's terminate_workers().
            for proc in list(getattr(pool, "_processes", {}).values()):
                owner[proc] = pool
            pool.shutdown(wait=False, cancel_futures=True)
        ctrl_c = isinstance(why, KeyboardInterrupt) and not isinstance(why, Terminated)
        killed = _terminate(list(owner), signal.SIGUSR1 if ctrl_c else signal.SIGTERM)
        _join_pools(pools)
    return [owner[proc] for proc in killed]


def _join_pools(pools: list[ProcessPoolExecutor]) -> None:
    """Wait for ``pools`` to end, Ctrl-C ignored (see :func:`_stop_pools`)."""
    with _sigint_ignored():
        for pool in pools:
            pool.shutdown(wait=True)


def _terminate(procs: list[Any], sig: int = signal.SIGTERM) -> list[Any]:
    """Send ``sig`` to ``procs``, and SIGKILL those still alive after :data:`STOP_GRACE_S`;
    returns the killed ones."""
    for proc in procs:
        if proc.is_alive():
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(proc.pid, sig)
    deadline = time.monotonic() + STOP_GRACE_S
    killed = []
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
            killed.append(proc)
    return killed


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
    queue = list(reversed(todo))  # popped from the end: the next point to start is last
    slots = [_Slot() for _ in range(min(workers, len(todo)))]
    _ensure_open_files(len(slots))
    crashes: dict[str, int] = {}
    barren = 0  # deaths before their point started, since a point last started or ended
    # Points whose worker died twice, each time beside other points: each runs once more
    # with nothing beside it, since a point may die only when others share the host's
    # memory.  No other point starts while one of them waits or runs.
    solo: list[Point] = []
    soloist: _Slot | None = None  # the slot running a point of ``solo``
    ctx = get_context("spawn")
    try:
        while True:
            idle = [s for s in slots if s.future is None]
            if solo and soloist is None and len(idle) == len(slots):
                soloist = idle[0]
                soloist.start(solo.pop(), ctx, out_dir, point_fn, redo)
            elif not solo and soloist is None:
                for slot in idle[: len(queue)]:
                    slot.start(queue.pop(), ctx, out_dir, point_fn, redo)
            busy = {s.future: s for s in slots if s.future is not None}
            if not busy:
                break
            on_running(len(busy))
            if len(busy) > 1:
                for s in busy.values():
                    s.shared = True
            done, _ = wait(busy, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                slot = busy[fut]
                point = slot.point
                assert point is not None
                if slot is soloist:
                    soloist = None
                try:
                    row, ran = fut.result()
                except BrokenProcessPool:
                    slot.died()
                else:
                    slot.finished()
                    barren = 0
                    on_row(point, row, ran)
                    continue
                ended = _marker(out_dir, point, ROW_FILE)
                written = (
                    read_row(out_dir, point.id) if ended not in (None, slot.row_marker) else None
                )
                if written is not None:
                    # It died after writing the point's row (on its way back): the point
                    # finished, and a failure row must not replace its own.
                    barren = 0
                    on_row(point, written, True)
                    continue
                if _marker(out_dir, point) == slot.marker:
                    # The worker died before the point began: nothing to blame it on.
                    barren += 1
                    if barren >= MAX_BARREN_STARTS * len(slots):
                        # Workers that die before any point starts (the point function's
                        # module cannot be imported in a fresh process, the host kills
                        # every new process) would otherwise be started again for ever.
                        raise ConfigError(
                            f"the worker processes died {barren} times in a row before "
                            "running any point (can a fresh Python process import simsched "
                            "and the point function?); "
                            + spelled("workers=0", "--workers 0")
                            + " runs the points in this process"
                        )
                    queue.append(point)
                    continue
                barren = 0
                crashes[point.id] = crashes.get(point.id, 0) + 1
                if crashes[point.id] < MAX_CRASHES:
                    queue.append(point)  # next to start, in a fresh worker
                elif slot.shared:
                    solo.append(point)
                else:
                    row = error_row(point, "the worker process died while running this point")
                    save_row(out_dir, point.id, row)
                    on_row(point, row, True)
    except BaseException as exc:
        killed = _stop_pools([s.pool for s in slots if s.pool is not None], exc)
        with _sigint_ignored():  # a second Ctrl-C must not cut a record short
            _record_killed(slots, killed, out_dir, point_fn, exc)
        raise
    _join_pools([s.pool for s in slots if s.pool is not None])  # here, not at the exit


def _record_killed(
    slots: list[_Slot],
    killed: list[ProcessPoolExecutor],
    out_dir: Path,
    point_fn: PointFunction | None,
    why: BaseException,
) -> None:
    """Write the records of the points whose worker :func:`_stop_pools` had to kill
    (:func:`~simsched.experiments.point.record_killed`): the default point function's
    files, so only for it."""
    if point_fn is not None:
        return
    for slot in slots:
        point = slot.point
        if slot.future is None or point is None or slot.pool not in killed:
            continue
        # it began the point (wrote point.json) and was killed before recording it
        if _marker(out_dir, point) != slot.marker:
            record_killed(point, out_dir, why, slot.t0)


class _Slot:
    """One worker process of :func:`run_local`, running one point at a time.

    Each slot has a pool of its own (one process, reused from point to point), so a worker
    that dies breaks that pool alone: the death is the running point's, and no other
    point is disturbed or has to be run again.
    """

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None
        self.future: Future[Any] | None = None
        self.point: Point | None = None
        # the point's point.json and row.json when it was handed over
        self.marker: tuple[int, int] | None = None
        self.row_marker: tuple[int, int] | None = None
        # whether another point ran at the same time as this one, at any moment
        self.shared = False
        self.t0 = 0.0  # when the point was handed over (time.perf_counter)

    def start(
        self,
        point: Point,
        ctx: Any,
        out_dir: Path,
        point_fn: PointFunction | None,
        redo: tuple[bool, bool],
    ) -> None:
        self.point, self.shared, self.t0 = point, False, time.perf_counter()
        self.marker, self.row_marker = _marker(out_dir, point), _marker(out_dir, point, ROW_FILE)
        args = (point.to_dict(), str(out_dir), point_fn, *redo)
        with _sigint_ignored():  # the worker starts here and inherits the ignored Ctrl-C
            if self.pool is not None:
                try:
                    self.future = self.pool.submit(_pool_execute_point, *args)
                    return
                except BrokenProcessPool:
                    # its worker died while it had no point (killed by the host or a
                    # user): no point's death, and a new worker takes the point
                    self.died()
            self.pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_worker_init)
            self.future = self.pool.submit(_pool_execute_point, *args)

    def finished(self) -> None:
        self.future = None

    def died(self) -> None:
        assert self.pool is not None
        self.pool.shutdown(wait=True)
        self.pool = self.future = None


def _marker(out_dir: Path, point: Point, name: str = POINT_FILE) -> tuple[int, int] | None:
    """The identity of the point's file ``name`` (inode and modification time), or None.

    ``point.json`` is written when the point starts and ``row.json`` when it ends, each by a
    rename, so each is a new file every time: a marker that differs from the one taken
    before the point was handed to a worker says that the point started (or ended).
    Comparing the file's time with the runner's clock instead would be wrong by up to a
    tick of the file system's coarser clock.
    """
    try:
        st = (point_dir(out_dir, point.id) / name).stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _ensure_open_files(slots: int) -> None:
    """Raise this process's soft limit of open files to what ``slots`` workers need (up to
    the hard limit), or refuse the worker count in one line.

    A pool of its own per worker costs :data:`FDS_PER_WORKER` descriptors in the runner:
    under the usual soft limit of 1024 about 120 workers would fail part-way through the
    sweep with "Too many open files".
    """
    import resource

    need = FDS_SPARE + FDS_PER_WORKER * slots
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard == resource.RLIM_INFINITY or hard >= need:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            return
    given = spelled(f"workers={slots}", f"--workers {slots}")
    dask = spelled("executor='dask'", "--executor dask")
    raise ConfigError(
        f"{given}: the runner needs about {need} open files and may open {soft} (hard limit "
        f"{hard}; see `ulimit -n`); use fewer workers, or {dask}"
    )


def connect_dask(address: str | None, workers: int) -> tuple[Any, Any]:
    """A Dask client (and the local cluster it owns, or None); errors are one line."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        dask = spelled("executor='dask'", "--executor dask")
        raise ConfigError(f"{dask} needs Dask: pip install 'simsched[dask]'") from None

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
                f"{spelled(f'address={address!r}', f'--address {address}')}: cannot reach a "
                f"Dask scheduler ({exc})"
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
                row, ran = error_row(p, described(exc)), True
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
