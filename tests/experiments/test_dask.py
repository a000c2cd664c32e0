"""Dask executor against a real loopback cluster: a worker dies mid-sweep, nothing is lost
or repeated, and the rows equal a local run's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from simsched.experiments import load_results, load_spec, run_sweep

HERE = Path(__file__).parent
DASK = Path(sys.executable).with_name("dask")
# Columns that legitimately differ between two runs of the same point.
VOLATILE = {
    "point_wall_s",
    "wall_s",
    "point_cpu_s",
    "point_loadavg_1m",
    "host_python_ms",
    "host_gather_ms",
}

SPEC = """
name: dasktest
workloads:
  - {name: w, generator: fake, params: {n: 10, sleep: 0.6}}
machines: ["itrs-scaling-{1,2}"]
schedulers: [ws, pdf]
seeds: [0, 1]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stable(df):
    cols = sorted(c for c in df.columns if c not in VOLATILE)
    return df[cols].sort_values("point_id").reset_index(drop=True)


@pytest.mark.skipif(not DASK.exists(), reason="dask command-line tool not installed")
def test_dask_cluster_survives_a_killed_worker(tmp_path):
    spec = tmp_path / "d.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    log = tmp_path / "log.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "SIMSCHED_TEST_POINT_LOG": str(log),
        "DASK_DISTRIBUTED__WORKER__DAEMON": "False",
    }
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [str(DASK), *args],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(p)
        return p

    import sweep_pointfns
    from dask.distributed import Client

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        workers = [
            start(
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--name",
                f"w{i}",
            )
            for i in range(2)
        ]
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=90)

        loaded = load_spec(spec, small=False)
        killer_done = []

        def kill_when_busy() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                text = log.read_text() if log.exists() else ""
                if text.count("end ") >= 2 and text.count("start ") - text.count("end ") >= 1:
                    os.killpg(workers[0].pid, signal.SIGKILL)
                    killer_done.append(True)
                    return
                time.sleep(0.05)

        import threading

        killer = threading.Thread(target=kill_when_busy, daemon=True)
        killer.start()
        report = run_sweep(
            loaded,
            executor="dask",
            address=address,
            point_fn=sweep_pointfns.fake_point,
            progress=False,
        )
        killer.join(timeout=5)
        assert killer_done, "the worker was never killed: the test did not exercise recovery"
        assert report.failed == 0 and report.ran + report.skipped == 8

        ends = Counter(
            ln.split()[1] for ln in log.read_text().splitlines() if ln.startswith("end ")
        )
        ids = {p.id for p in loaded.points()}
        # A point the killed worker had finished but not yet reported is run again (its
        # result died with the worker): at most one point, twice.
        assert set(ends) == ids and sum(ends.values()) <= len(ids) + 1, ends

        dask_rows = load_results(loaded.out_dir)
        local = load_spec(spec, small=False, sets=[f"out={tmp_path / 'local'}"])
        run_sweep(local, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
        local_rows = load_results(local.out_dir)
        assert len(dask_rows) == 8
        assert _stable(dask_rows).equals(_stable(local_rows))
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


def test_local_dask_cluster_matches_local_executor(tmp_path):
    import sweep_pointfns

    spec = tmp_path / "d.yaml"
    spec.write_text(textwrap.dedent(SPEC).replace("sleep: 0.6", "sleep: 0"))
    loaded = load_spec(spec, small=False)
    report = run_sweep(
        loaded, executor="dask", workers=2, point_fn=sweep_pointfns.fake_point, progress=False
    )
    assert (report.ran, report.failed) == (8, 0)
    again = run_sweep(
        loaded, executor="dask", workers=1, point_fn=sweep_pointfns.fake_point, progress=False
    )
    assert (again.ran, again.skipped) == (0, 8)  # nothing to do: no cluster is even needed
    local = load_spec(spec, small=False, sets=[f"out={tmp_path / 'local'}"])
    run_sweep(local, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
    assert _stable(load_results(loaded.out_dir)).equals(_stable(load_results(local.out_dir)))
