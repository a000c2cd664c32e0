"""Executors: a crashing worker, Ctrl-C, a killed runner, an unreachable Dask scheduler."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sweep_pointfns
from sweep_helpers import (
    HERE,
    cli_cmd,
    gone,
    make_spec,
    run_cli,
    temporaries,
    until,
    wait_for,
)

from simsched.experiments import load_results, load_spec, run_sweep, sweep_status


@contextlib.contextmanager
def _reaped(proc):
    """Kill ``proc``'s process group if the block leaves it running."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _interrupt(proc, press, presses=1, timeout=60):
    """Call ``press`` ``presses`` times, 0.2 s apart; ``proc``'s stderr and the seconds
    from the first press to its end."""
    t0 = time.monotonic()
    for _ in range(presses):
        press()
        time.sleep(0.2)
    _, err = proc.communicate(timeout=timeout)
    return err, time.monotonic() - t0


def crash_point(point, run_dir):
    """Kill the worker (as a segfault or an out-of-memory kill would) at the seed in
    ``SIMSCHED_TEST_CRASH_SEED``, after ``SIMSCHED_TEST_CRASH_AFTER`` seconds; the other
    points sleep ``SIMSCHED_TEST_INNOCENT_SLEEP`` seconds and succeed."""
    if point.seed == int(os.environ.get("SIMSCHED_TEST_CRASH_SEED", "-1")):
        sweep_pointfns._log(point.id, "start")  # fake_point logs the others
        time.sleep(float(os.environ.get("SIMSCHED_TEST_CRASH_AFTER", "0")))
        os._exit(3)
    time.sleep(float(os.environ.get("SIMSCHED_TEST_INNOCENT_SLEEP", "0")))
    return sweep_pointfns.fake_point(point, run_dir)


@pytest.mark.parametrize("beside", [False, True])
def test_crashing_worker_does_not_stop_the_sweep(tmp_path, monkeypatch, beside):
    """``beside``: the other points are still running when a worker dies (they used to be
    failed with the crashing point when that happened in two pools, and later ran again,
    one at a time)."""
    log = tmp_path / "log.txt"
    monkeypatch.setenv("SIMSCHED_TEST_POINT_LOG", str(log))
    monkeypatch.setenv("SIMSCHED_TEST_CRASH_SEED", "1")
    monkeypatch.setenv("SIMSCHED_TEST_CRASH_AFTER", "0.3" if beside else "0")
    monkeypatch.setenv("SIMSCHED_TEST_INNOCENT_SLEEP", "1.0" if beside else "0")
    loaded = load_spec(make_spec(tmp_path), small=False)
    report = run_sweep(loaded, workers=2, point_fn=crash_point, progress=False)
    df = load_results(loaded.out_dir)
    assert len(df) == 6
    crashed = df[df["status"] == "error"]
    assert set(crashed["seed"]) == {1} and len(crashed) == 2
    assert crashed["error"].str.contains("worker process died").all()
    assert report.failed == len(crashed)
    # each worker's death is its own point's: every other point ran once, however many
    # times a worker beside it died; a crashing point twice, or three times when its
    # second death came beside another point (the third with it alone)
    starts = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start ")]
    for pid in df["point_id"]:
        assert starts.count(pid) in ((2, 3) if pid in set(crashed["point_id"]) else (1,)), pid


def fragile_point(point, run_dir):
    """Die (as an out-of-memory kill would) when another point runs at the same time: the
    points of seed 1 are fragile; the others hold a file in ``SIMSCHED_TEST_BUSY_DIR``
    while they run, for ``SIMSCHED_TEST_INNOCENT_SLEEP`` seconds."""
    busy = Path(os.environ["SIMSCHED_TEST_BUSY_DIR"])
    if point.seed == 1:
        time.sleep(0.5)  # the points started beside it are running by now
        if any(busy.iterdir()):
            sweep_pointfns._log(point.id, "start")  # fake_point logs it when it runs
            os._exit(3)
        return sweep_pointfns.fake_point(point, run_dir)
    mine = busy / point.id
    mine.touch()
    try:
        time.sleep(float(os.environ["SIMSCHED_TEST_INNOCENT_SLEEP"]))
        return sweep_pointfns.fake_point(point, run_dir)
    finally:
        mine.unlink()


def test_a_point_that_dies_only_beside_others_finishes_alone(tmp_path, monkeypatch):
    """A point whose worker died twice beside other points runs once more with nothing
    beside it (a point may die of the memory others take), and finishes."""
    log, busy = tmp_path / "log.txt", tmp_path / "busy"
    busy.mkdir()
    monkeypatch.setenv("SIMSCHED_TEST_POINT_LOG", str(log))
    monkeypatch.setenv("SIMSCHED_TEST_BUSY_DIR", str(busy))
    monkeypatch.setenv("SIMSCHED_TEST_INNOCENT_SLEEP", "4")
    loaded = load_spec(make_spec(tmp_path), small=False)
    report = run_sweep(loaded, workers=3, point_fn=fragile_point, progress=False)
    df = load_results(loaded.out_dir)
    assert (report.ran, report.failed) == (6, 0) and (df["status"] == "ok").all()
    starts = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start ")]
    fragile = set(df[df["seed"] == 1]["point_id"])
    assert len(fragile) == 2
    for pid in df["point_id"]:
        assert starts.count(pid) <= (3 if pid in fragile else 1), pid
    # at least one fragile point died twice beside the others and finished alone
    assert any(starts.count(pid) == 3 for pid in fragile)


def test_a_worker_that_died_between_points_is_replaced(tmp_path):
    """A worker killed while it had no point (by the host, by a user) left its pool broken,
    and the next point handed to it ended the sweep in a BrokenProcessPool traceback."""
    from multiprocessing import get_context

    from simsched.experiments.executors import _Slot

    loaded = load_spec(make_spec(tmp_path), small=False)
    first, second = loaded.points()[:2]
    slot, ctx = _Slot(), get_context("spawn")
    try:
        slot.start(first, ctx, loaded.out_dir, sweep_pointfns.fake_point, (False, False))
        assert slot.future.result(timeout=120)[0]["status"] == "ok"
        slot.finished()
        (worker,) = slot.pool._processes.values()
        worker.kill()
        worker.join()
        assert until(lambda: slot.pool._broken, timeout=10)
        slot.start(second, ctx, loaded.out_dir, sweep_pointfns.fake_point, (False, False))
        assert slot.future.result(timeout=120)[0]["status"] == "ok"
    finally:
        if slot.pool is not None:
            slot.pool.shutdown(wait=True)


def row_then_die_point(point, run_dir):
    """At seed 1, write the point's row and die before returning it, as a worker killed on
    its way back from a finished point would."""
    from simsched.experiments.store import write_row

    record = sweep_pointfns.fake_point(point, run_dir)
    if point.seed == 1:
        write_row(run_dir.parent.parent, point.id, point.columns(), record, 0.0, {})
        os._exit(3)
    return record


def test_a_point_whose_worker_died_after_its_row_is_finished(tmp_path):
    """Counted as a death, such a point ran again, or was failed over its own row."""
    log = tmp_path / "log.txt"
    os.environ["SIMSCHED_TEST_POINT_LOG"] = str(log)
    try:
        loaded = load_spec(make_spec(tmp_path), small=False)
        report = run_sweep(loaded, workers=2, point_fn=row_then_die_point, progress=False)
    finally:
        del os.environ["SIMSCHED_TEST_POINT_LOG"]
    df = load_results(loaded.out_dir)
    assert (report.ran, report.failed) == (6, 0) and (df["status"] == "ok").all()
    starts = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start ")]
    assert sorted(starts) == sorted(df["point_id"])  # each point ran once


def test_a_worker_count_the_open_files_cannot_hold_is_refused(monkeypatch):
    import resource

    from simsched.errors import ConfigError, command_line
    from simsched.experiments import executors

    limits = {"now": (256, 4096)}
    monkeypatch.setattr(resource, "getrlimit", lambda which: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda which, lim: limits.update(now=lim))
    executors._ensure_open_files(100)  # 864 needed: the soft limit is raised to it
    assert limits["now"] == (64 + 8 * 100, 4096)
    limits["now"] = (256, 512)
    with pytest.raises(ConfigError, match=r"^workers=100: the runner needs about 864 open") as e:
        executors._ensure_open_files(100)
    assert str(e.value).endswith("use fewer workers, or executor='dask'")
    with command_line(), pytest.raises(ConfigError, match=r"^--workers 100: the runner needs"):
        executors._ensure_open_files(100)


def test_workers_that_die_before_any_point_end_the_sweep_with_one_error(tmp_path, capsys):
    """Workers that died before their first point (the point function's module ending
    every fresh process) were started again for ever."""
    import dies_in_workers

    from simsched.errors import ConfigError

    spec = make_spec(tmp_path)
    loaded = load_spec(spec, small=False)
    with pytest.raises(ConfigError, match=r"died 4 times in a row before running any point"):
        run_sweep(loaded, workers=2, point_fn=dies_in_workers.point, progress=False)
    assert sweep_status(loaded)["ok"] == 0
    args = ["--point-fn", "dies_in_workers:point", "--workers", "2", "--no-progress"]
    code, _, err = run_cli(["sweep", "run", str(spec), *args], capsys)
    assert code == 2 and err.count("\n") == 1 and "before running any point" in err, err
    # in the runner's own process the same function runs
    report = run_sweep(loaded, workers=0, point_fn=dies_in_workers.point, progress=False)
    assert (report.ran, report.failed) == (6, 0)


@pytest.mark.parametrize(
    ("executor", "target", "presses"),
    [
        ("local", "runner", 1),  # SIGINT to the runner alone (used to hang for ever)
        ("local", "group", 1),  # Ctrl-C in a terminal (used to run every queued point)
        ("local", "group", 2),  # a second Ctrl-C (used to print three tracebacks)
        ("dask", "group", 1),  # used to print a CancelledError traceback
    ],
)
def test_ctrl_c_stops_within_seconds_and_a_rerun_resumes(tmp_path, executor, target, presses):
    spec = make_spec(tmp_path, sleep=1.5)
    log = tmp_path / "log.txt"
    env = {**os.environ, "SIMSCHED_TEST_POINT_LOG": str(log), "PYTHONPATH": str(HERE)}
    cmd = cli_cmd(spec, "--workers", "2", "--executor", executor)
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stderr=subprocess.PIPE, text=True)
    with _reaped(proc):
        wait_for(log, "start", 2)
        send = os.killpg if target == "group" else os.kill
        err, stopped_after = _interrupt(proc, lambda: send(proc.pid, signal.SIGINT), presses)
    # A second Ctrl-C that lands once the runner has stopped its workers and printed its
    # line, while the interpreter exits, ends the process by the signal: a shell reports
    # that as status 130 too, and nothing more is printed (checked below).
    assert proc.returncode in ((130,) if presses == 1 else (130, -signal.SIGINT)), err
    # Seconds on an idle host; a loaded one (shared CI machines) stretches process and
    # cluster teardown in proportion.  That the queued points did not all run is checked below.
    assert stopped_after < 6.0 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err
    assert lines[-1].startswith("simsched: error: interrupted"), err
    assert len(lines) == 1, err
    loaded = load_spec(spec, small=False)
    before = sweep_status(loaded)
    assert before["ok"] < 6  # stopped: the queued points did not all run
    assert temporaries(loaded.out_dir) == []
    log.unlink()
    subprocess.run(cli_cmd(spec, "--workers", "2"), env=env, check=True, timeout=120)
    ends = [ln.split()[1] for ln in log.read_text().splitlines() if ln.startswith("end")]
    assert len(ends) == 6 - before["ok"] and len(set(ends)) == len(ends)
    assert sweep_status(loaded)["ok"] == 6


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_workers_exit_when_the_runner_is_killed(tmp_path, executor):
    """kill -9 of the runner used to leave its workers running the queued points and then
    idling under PID 1 for ever."""
    import psutil

    spec = make_spec(tmp_path, sleep=20)  # every point outlasts the test
    log = tmp_path / "log.txt"
    env = {**os.environ, "SIMSCHED_TEST_POINT_LOG": str(log), "PYTHONPATH": str(HERE)}
    proc = subprocess.Popen(
        cli_cmd(spec, "--workers", "2", "--executor", executor),
        env=env,
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(log, "start", 2)
        workers = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        assert workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t0 = time.monotonic()
        while not all(gone(pid) for pid in workers) and time.monotonic() - t0 < 15:
            time.sleep(0.1)
        left = [pid for pid in workers if not gone(pid)]
        exited_after = time.monotonic() - t0
    finally:
        for child in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
    assert left == [] and exited_after < 5.0
    # the points they were running stay pending (no row), and no point started afterwards
    loaded = load_spec(spec, small=False)
    assert sweep_status(loaded)["ok"] == 0
    assert log.read_text().count("start") == 2
    assert temporaries(loaded.out_dir) == []


def test_a_worker_starting_when_the_runner_is_killed_exits_quietly(tmp_path):
    """A worker still in its set-up when kill -9 hit the runner printed "Exception in
    initializer" and a traceback of _RunnerGone on the terminal: the stop meant to unwind a
    running point was raised where no point runs."""
    script = textwrap.dedent(
        """
        import os
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context
        from simsched.experiments.executors import _worker_init

        pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_worker_init)
        pool.submit(os.getpid)  # starts the worker
        os._exit(0)  # the runner dies (as by kill -9) before the worker has set itself up
        """
    )
    # The worker keeps the runner's stderr: reading it to its end waits for the worker.
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in proc.stderr and "initializer" not in proc.stderr, proc.stderr


def test_a_stopped_point_is_told_which_signal_stopped_the_sweep(monkeypatch):
    """A sweep stopped by SIGTERM recorded its running points as "interrupted (Ctrl-C)":
    the runner stopped its workers with SIGTERM whatever stopped it, and they raised a
    plain KeyboardInterrupt.  Ctrl-C now reaches them as SIGUSR1."""
    from simsched.errors import Terminated
    from simsched.experiments import executors

    sent = []
    monkeypatch.setattr(executors, "_terminate", lambda procs, sig: sent.append(sig) or [])
    monkeypatch.setattr(executors, "_join_pools", lambda pools: None)
    for why in (KeyboardInterrupt(), Terminated(), RuntimeError("the runner failed")):
        executors._stop_pools([], why)
    assert sent == [signal.SIGUSR1, signal.SIGTERM, signal.SIGTERM]
    script = textwrap.dedent(
        """
        import os, signal
        from simsched.errors import Terminated
        from simsched.experiments import executors

        executors._worker_init()
        executors._IN_POINT.set()
        for sig in (signal.SIGUSR1, signal.SIGTERM):
            try:
                os.kill(os.getpid(), sig)
                signal.sigtimedwait([], 0.5)
            except KeyboardInterrupt as exc:
                print(type(exc).__name__)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.split() == ["KeyboardInterrupt", "Terminated"], proc.stderr


def test_unreachable_dask_scheduler_leaves_no_output_folder(tmp_path, monkeypatch, capsys):
    """The folder used to be made before the connection failed, and was left empty."""
    from simsched.experiments import executors

    monkeypatch.setattr(executors, "DASK_CONNECT_TIMEOUT_S", 1)
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
        args = ["--point-fn", "sweep_pointfns:fake_point", "--executor", "dask"]
        code, _, err = run_cli(
            ["sweep", "run", str(make_spec(tmp_path)), *args, "--address", address], capsys
        )
    assert code == 2
    error = err.strip().splitlines()[-1]  # after the line saying it connects
    assert error.startswith(f"simsched: error: --address {address}: cannot reach a Dask")
    assert not (tmp_path / "results").exists()


KILLED_SPEC = """
name: killed
workloads:
  - {name: h, generator: heat, params: {nx: 1026, ny: 514, iters: 40}}
machines: [opteron-8380-4x4]
schedulers: [ws]
seeds: [0]
"""


def test_a_point_whose_worker_is_killed_after_the_grace_gets_its_record(tmp_path):
    """A worker deep in compiled code does not see the runner's stop signal; the runner
    kills it after STOP_GRACE_S, and the point used to keep no record of its run (a
    point.json alone).  Here the workers inherit a mask that blocks SIGUSR1 and SIGTERM,
    as a long kernel call would hold them off."""
    from simsched.experiments.executors import STOP_GRACE_S

    spec = tmp_path / "killed.yaml"
    spec.write_text(textwrap.dedent(KILLED_SPEC))
    cmd = [
        sys.executable,
        "-c",
        "import sys; from simsched.cli import main; main(sys.argv[1:])",
        *("sweep", "run", str(spec), "--no-progress", "--workers", "1"),
    ]
    proc = subprocess.Popen(
        cmd,
        start_new_session=True,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.pthread_sigmask(
            signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM}
        ),
    )
    loaded = load_spec(spec, small=False)
    with _reaped(proc):
        found = until(lambda: list(loaded.out_dir.glob("points/*/point.json")), 120)
        assert found, "the point never started"
        time.sleep(0.5)
        assert not (found[0].parent / "row.json").exists()  # still running
        err, stopped_after = _interrupt(proc, lambda: os.kill(proc.pid, signal.SIGINT))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().startswith("simsched: error: interrupted"), err
    assert stopped_after >= STOP_GRACE_S  # it had to be killed
    pdir = found[0].parent
    assert not (pdir / "row.json").exists()  # pending: the next run resumes it
    result = json.loads((pdir / "result.json").read_text())
    assert (result["status"], result["error"]) == ("interrupted", "interrupted (Ctrl-C)")
    assert result["scheduler"] == "ws" and result["machine"] == "opteron-8380-4x4"
    assert 0.5 <= result["wall_s"] < 60
    assert json.loads((pdir / "config.json").read_text())["scheduler"] == "ws"
    status = sweep_status(loaded)
    assert (status["ok"], status["missing"], status["running"]) == (0, 1, [])
