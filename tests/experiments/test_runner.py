"""Sweep runner: rows on success and failure, skipping, resuming, crash isolation, CLI."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import sweep_pointfns
from sweep_helpers import HERE, cli_cmd, make_spec, run_cli, sweep_run_exit, until

from simsched.cli import main
from simsched.errors import ConfigError
from simsched.experiments import load_results, load_spec, run_sweep, sweep_status


def test_in_process_run_writes_rows_and_skips_on_rerun(tmp_path):
    loaded = load_spec(make_spec(tmp_path), small=False)
    report = run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
    assert (report.total, report.ran, report.skipped, report.failed) == (6, 6, 0, 0)
    df = load_results(loaded.out_dir)
    assert len(df) == 6 and set(df["status"]) == {"ok"}
    assert sorted(df["point_id"]) == sorted(p.id for p in loaded.points())
    for p in loaded.points():
        pdir = loaded.out_dir / "points" / p.id
        assert json.loads((pdir / "point.json").read_text())["id"] == p.id
        assert (pdir / "result.json").is_file()
    again = run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
    assert (again.ran, again.skipped) == (0, 6)
    # "no" was true: every failed point would have run again
    with pytest.raises(ConfigError, match="^retry_failed='no': expected True or False"):
        run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, retry_failed="no")
    assert sweep_status(loaded) == {
        "sweep": "fake",
        "out": str(loaded.out_dir),
        "total": 6,
        "ok": 6,
        "failed": 0,
        "missing": 0,
        "stale": 0,
        "orphans": 0,
        "trace_changed": 0,
        "running": [],
    }


def test_failures_are_recorded_and_do_not_stop_the_sweep(tmp_path):
    loaded = load_spec(make_spec(tmp_path, fail=True), small=False)
    report = run_sweep(loaded, workers=2, point_fn=sweep_pointfns.fake_point, progress=False)
    # seed 1 fails for ws on both machines; pdf runs seed 0 only
    assert (report.ran, report.failed) == (6, 2)
    df = load_results(loaded.out_dir)
    bad = df[df["status"] == "error"]
    assert len(bad) == 2 and set(bad["seed"]) == {1}
    assert bad["error"].str.contains("ValueError: point .* was told to fail").all()
    assert sweep_status(loaded)["failed"] == 2
    # failed points are finished: skipped unless asked to retry
    assert run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False).ran == 0
    retry = run_sweep(
        loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False, retry_failed=True
    )
    assert retry.ran == 2


def test_points_rerun_longest_first_by_their_earlier_wall_time(tmp_path):
    """Points to run again (here: failed, retried) start longest first by the wall time of
    their earlier run, after the points never run, which keep the spec's order."""
    from simsched.experiments.runner import pending_points
    from simsched.experiments.store import save_row

    loaded = load_spec(make_spec(tmp_path), small=False)
    points = loaded.points()
    walls = {points[1].id: 1.0, points[2].id: 5.0, points[4].id: 3.0}
    for p in points:
        if p.id in walls:
            row = {**p.columns(), "status": "error", "error": "x", "point_wall_s": walls[p.id]}
            save_row(loaded.out_dir, p.id, row)
    todo, done = pending_points(loaded, retry_failed=True)
    never = [p.id for p in points if p.id not in walls]
    assert [p.id for p in todo] == [*never, points[2].id, points[4].id, points[1].id]
    assert done == []
    # not retried, the failed points are finished, and the rest keep the spec's order
    todo, done = pending_points(loaded)
    assert [p.id for p in todo] == never and len(done) == 3


def test_renamed_entries_relabel_their_finished_rows(tmp_path):
    spec = make_spec(tmp_path)
    spec.write_text(spec.read_text().replace("{name: pdf,", "{name: pdf, label: p1,"))

    def record(p, d):
        return {"record_version": 1, "scheduler": p.scheduler["name"], "makespan_cycles": 1}

    first = run_sweep(load_spec(spec, small=False), workers=0, point_fn=record, progress=False)
    assert first.ran == 6
    # labels are not in the ids: renaming finds the finished points, and their rows
    # take the new labels instead of keeping the old ones beside new points' labels
    spec.write_text(
        spec.read_text()
        .replace("label: p1,", "label: p2,")
        .replace("[ws, ", "[{name: ws, label: w}, ")
    )
    loaded = load_spec(spec, small=False)
    again = run_sweep(loaded, workers=0, point_fn=record, progress=False)
    assert (again.ran, again.skipped) == (0, 6)
    df = load_results(loaded.out_dir)
    assert sorted(set(df["scheduler"])) == ["p2", "w"]
    # the record's own value, merged into the old label "ws" before, is kept as a fresh
    # run of the new label would keep it
    assert set(df["run.scheduler"]) == {"pdf", "ws"}
    assert run_sweep(loaded, workers=0, point_fn=record, progress=False).ran == 0


def test_missing_trace_is_an_error_before_any_point(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: nt\nworkloads: [missing.sst]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    )
    with pytest.raises(ConfigError, match="workloads.0: trace missing.sst: no such file"):
        run_sweep(load_spec(spec, small=False), workers=0, progress=False)
    assert not (tmp_path / "results").exists()


def test_a_bad_keep_limit_is_refused_before_any_point(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIMSCHED_KEEP_MB", "lots")
    spec = make_spec(tmp_path)
    with pytest.raises(ConfigError, match="^SIMSCHED_KEEP_MB='lots': not a whole number"):
        run_sweep(load_spec(spec, small=False), workers=0, progress=False)
    assert not (tmp_path / "results").exists()
    with pytest.raises(SystemExit) as e:
        main(["sweep", "run", str(spec), "--workers", "0"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "SIMSCHED_KEEP_MB='lots'" in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_cli_run_status_show_export(tmp_path, capsys):
    spec = str(make_spec(tmp_path))
    code, _, err = run_cli(
        [
            "sweep",
            "run",
            spec,
            "--workers",
            "0",
            "--no-progress",
            "--point-fn",
            "sweep_pointfns:fake_point",
        ],
        capsys,
    )
    assert code in (0, None), err
    assert "ran 6" in err
    code, out, _ = run_cli(
        ["sweep", "status", spec, "--json", "--point-fn", "sweep_pointfns:fake_point"], capsys
    )
    assert json.loads(out)["ok"] == 6
    # status checks the function as run does (it passed a module that does not exist)
    code, _, err = run_cli(["sweep", "status", spec, "--point-fn", "nomodule:fn"], capsys)
    assert code == 2 and "--point-fn 'nomodule:fn': cannot import nomodule" in err
    out_dir = str(tmp_path / "results" / "fake")
    code, out, _ = run_cli(
        [
            "results",
            "show",
            out_dir,
            "--format",
            "csv",
            "--where",
            "scheduler=ws",
            "--where",
            "cores>=2",
            "--columns",
            "scheduler,cores,seed",
        ],
        capsys,
    )
    lines = out.strip().splitlines()
    assert lines[0] == "scheduler,cores,seed" and sorted(lines[1:]) == ["ws,2,0", "ws,2,1"]
    code, out, _ = run_cli(["results", "show", out_dir], capsys)
    assert "6 rows" in out
    target = tmp_path / "r.csv"
    run_cli(["results", "export", out_dir, "-o", str(target)], capsys)
    assert len(target.read_text().strip().splitlines()) == 7
    code, _, err = run_cli(["results", "show", out_dir, "--where", "__import__('os')=1"], capsys)
    assert code == 2 and "expected COLUMN OP VALUE" in err
    code, _, err = run_cli(["results", "export", out_dir, "-o", str(tmp_path / "r.xlsx")], capsys)
    assert code == 2 and ".csv or .parquet" in err


def test_killed_runner_resumes_only_missing_points(tmp_path, capsys):
    """Kill the runner (SIGKILL) mid-sweep; the re-run completes only what is missing."""
    spec = make_spec(tmp_path, sleep=1.0)
    log = tmp_path / "log.txt"
    env = {**os.environ, "SIMSCHED_TEST_POINT_LOG": str(log), "PYTHONPATH": str(HERE)}
    cmd = cli_cmd(spec, "--workers", "0")
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # The third point has started, so the first two rows are written (one process:
            # a point's row is written before the next point starts).
            if log.exists() and log.read_text().count("start ") >= 3:
                break
            time.sleep(0.05)
        # `sweep status` names the point under way and who runs it (here: the runner).
        # Between two points nothing runs for a moment: ask again then.
        loaded = load_spec(spec, small=False)
        running = until(lambda: sweep_status(loaded)["running"])
        assert len(running) == 1, running
        assert running[0]["pid"] == proc.pid and running[0]["alive"] is True
        assert running[0]["workload"] == "w" and running[0]["scheduler"] in {"ws", "pdf"}
        args = ["sweep", "status", str(spec), "--point-fn", "sweep_pointfns:fake_point"]

        def printed():
            answer = run_cli(args, capsys)
            return answer if "running" in answer[1] else None

        code, out, _ = until(printed)
        assert code == 0 and "; 1 running (" in out, out
        assert "\n  running for " in out and f"(pid {proc.pid} on this host)" in out
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = sweep_status(loaded)
    assert 2 <= before["ok"] < 6
    assert before["running"] == []  # its claim file stays, its holder is gone
    first = set(log.read_text().split()[1::2])
    log.unlink()
    subprocess.run(cmd, env=env, check=True, timeout=120)
    ends = [ln.split()[1] for ln in log.read_text().splitlines() if ln.startswith("end")]
    assert len(ends) == 6 - before["ok"] and len(set(ends)) == len(ends)
    assert sweep_status(loaded)["ok"] == 6
    done_before = {p.id for p in loaded.points()} - set(ends)
    assert done_before <= first


def test_two_runners_of_one_sweep_run_each_point_once(tmp_path):
    spec = make_spec(tmp_path, sleep=0.4)
    log = tmp_path / "log.txt"
    env = {**os.environ, "SIMSCHED_TEST_POINT_LOG": str(log), "PYTHONPATH": str(HERE)}
    procs = [
        subprocess.Popen(
            cli_cmd(spec, "--workers", "1"), env=env, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    starts = [ln.split()[1] for ln in log.read_text().splitlines() if ln.startswith("start")]
    assert sorted(starts) == sorted(p.id for p in load_spec(spec, small=False).points())
    assert sweep_status(load_spec(spec, small=False))["ok"] == 6
    assert not list((tmp_path / "results").rglob("claim"))


def test_claim_is_exclusive_and_dies_with_its_holder(tmp_path):
    from simsched.experiments.claims import PointClaim, claim_holder, is_claimed

    a = PointClaim(tmp_path, "p1")
    t0 = time.time()
    assert a.acquire() and is_claimed(tmp_path, "p1")
    # the file says who holds it, and asking (is_claimed's probe) did not overwrite that
    held = claim_holder(tmp_path, "p1")
    assert held is not None and held["pid"] == os.getpid() and held["alive"] is True
    assert held["host"] == socket.gethostname() and t0 - 1 <= held["since"] <= time.time()
    assert not PointClaim(tmp_path, "p1").acquire()
    a.release()
    assert not is_claimed(tmp_path, "p1") and claim_holder(tmp_path, "p1") is None
    claim = tmp_path / "points" / "p1" / "claim"
    bad = ["", "not json", "[1]", '{"pid": "1", "host": "h", "since": 0}']
    bad += ['{"pid": 1, "host": "h", "since": NaN}', '{"pid": 1, "host": "h", "since": true}']
    for text in bad:
        claim.write_text(text)
        assert claim_holder(tmp_path, "p1") is None, text  # says nothing readable
    claim.write_text('{"pid": 1, "host": "another-host.invalid", "since": 5}')
    assert claim_holder(tmp_path, "p1") == {
        "pid": 1,
        "host": "another-host.invalid",
        "since": 5.0,
        "alive": None,  # another host's process: not known from here
    }
    # A holder killed with SIGKILL leaves the file but no claim.
    code = (
        "import os, sys, time; from simsched.experiments.claims import PointClaim; "
        f"c = PointClaim({str(tmp_path)!r}, 'p2'); assert c.acquire(); print('held', flush=True);"
        " time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert is_claimed(tmp_path, "p2")
        assert claim_holder(tmp_path, "p2")["pid"] == holder.pid  # type: ignore[index]
        holder.kill()
        holder.wait()
        assert (tmp_path / "points" / "p2" / "claim").exists()
        assert claim_holder(tmp_path, "p2")["alive"] is False  # type: ignore[index]
        assert not is_claimed(tmp_path, "p2")
        assert PointClaim(tmp_path, "p2").acquire()
    finally:
        if holder.poll() is None:
            holder.kill()


def test_claim_holder_without_proc_asks_the_process_itself(tmp_path, monkeypatch):
    # macOS has no /proc: whether the holder is alive is then signal 0's answer
    from simsched.experiments.claims import PointClaim, claim_holder

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    real = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: p != "/proc/self" and real(p))
    a = PointClaim(tmp_path, "p1")
    assert a.acquire()
    assert claim_holder(tmp_path, "p1")["alive"] is True  # type: ignore[index]
    claim = tmp_path / "points" / "p1" / "claim"
    claim.write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(), "since": 1}))
    assert claim_holder(tmp_path, "p1")["alive"] is False  # type: ignore[index]
    a.release()


def test_rerun_reports_earlier_failures_and_names_the_retry_option(tmp_path, capsys):
    spec = make_spec(tmp_path, fail=True)
    args = ["sweep", "run", str(spec), "--workers", "0", "--no-progress"]
    args += ["--point-fn", "sweep_pointfns:fake_point"]
    code, _, err = run_cli(args, capsys)
    assert code == 1 and "failed 2" in err
    code, _, err = run_cli(args, capsys)
    assert code == 1 and "ran 0" in err and "failed 2" in err
    assert "--retry-failed" in err


def test_a_trace_file_replaced_since_its_points_ran_runs_them_again(tmp_path, capsys):
    # a point names a trace file by path: a new trace written under the old name kept the
    # old trace's rows on resume, beside rows of the new one
    from simsched.trace import open_trace
    from simsched.workloads import generate

    trace = tmp_path / "t.sst"
    generate("fib", trace, n=8, cutoff=2)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkloads: [{trace: t.sst}]\nmachines: [itrs-scaling-2]\nschedulers: [ws, pdf]\n"
    )
    loaded = load_spec(spec, small=False)
    assert run_sweep(loaded, workers=0, progress=False).ran == 2
    assert run_sweep(loaded, workers=0, progress=False).skipped == 2
    generate("fib", trace, n=9, cutoff=2)
    status = sweep_status(loaded)
    assert (status["trace_changed"], status["ok"], status["missing"]) == (2, 0, 2)
    code, out, _ = run_cli(["sweep", "status", str(spec)], capsys)
    assert code == 0 and "2 of the missing were run on a trace file that holds another" in out
    again = run_sweep(loaded, workers=0, progress=False)
    assert (again.ran, again.skipped) == (2, 0)
    with open_trace(trace) as t:
        assert set(load_results(loaded.out_dir)["trace_digest"]) == {t.header.digest}
    assert sweep_status(loaded)["ok"] == 2


def test_points_of_other_code_are_counted_and_rerun_on_request(tmp_path, monkeypatch):
    import simsched.identity

    loaded = load_spec(make_spec(tmp_path), small=False)
    fn = sweep_pointfns.identity_point
    assert run_sweep(loaded, workers=0, point_fn=fn, progress=False).ran == 6
    assert sweep_status(loaded)["stale"] == 0
    monkeypatch.setattr(simsched.identity, "results_identity", lambda: "0123456789abcdef")
    assert sweep_status(loaded)["stale"] == 6
    kept = run_sweep(loaded, workers=0, point_fn=fn, progress=False)
    assert (kept.ran, kept.skipped, kept.stale) == (0, 6, 6)
    redo = run_sweep(loaded, workers=0, point_fn=fn, progress=False, rerun_stale=True)
    assert (redo.ran, redo.stale) == (6, 0)
    assert sweep_status(loaded)["stale"] == 0
    assert set(load_results(loaded.out_dir)["code_identity"]) == {"0123456789abcdef"}


@pytest.mark.parametrize("workers", [0, 2])
def test_full_disk_leaves_the_point_pending_not_failed(tmp_path, monkeypatch, capsys, workers):
    """A full disk used to record the point as failed (it needed --retry-failed)."""
    flag = tmp_path / "disk-is-full"
    flag.touch()
    monkeypatch.setenv("SIMSCHED_TEST_FULL", str(flag))
    loaded = load_spec(make_spec(tmp_path), small=False)
    fn = sweep_pointfns.full_disk_point
    report = run_sweep(loaded, workers=workers, point_fn=fn, progress=False)
    # seed 1 of ws on both machines met the full disk: not failed, not done, no row
    assert (report.ran, report.failed, len(report.interrupted)) == (4, 0, 2)
    assert all("no space left on the device" in msg for _, msg in report.interrupted)
    status = sweep_status(loaded)
    assert (status["ok"], status["failed"], status["missing"]) == (4, 0, 2)
    for pid, _ in report.interrupted:
        assert not (loaded.out_dir / "points" / pid / "row.json").exists()
    flag.unlink()  # space freed: a plain rerun (no --retry-failed) finishes them
    again = run_sweep(loaded, workers=workers, point_fn=fn, progress=False)
    assert (again.ran, again.skipped, again.failed, again.interrupted) == (2, 4, 0, [])
    assert sweep_status(loaded)["ok"] == 6


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_in_a_log_is_plain_lines_as_points_finish(tmp_path, monkeypatch, terminal):
    """Outside a terminal rich drew the sweep's bar once, at the end: a study of hours with
    its output in a log said nothing until it had finished."""
    import io

    from rich.console import Console

    import simsched.progress

    monkeypatch.setattr(simsched.progress, "LINE_INTERVAL_S", 0.0)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=100)
    loaded = load_spec(make_spec(tmp_path, fail=True), small=False)
    run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, console=console)
    lines = buf.getvalue().splitlines()
    if terminal:  # the bar, drawn by rich
        assert not any(ln.startswith("sweep: ") for ln in lines) and "6/6" in buf.getvalue()
        return
    done = [ln.split(" points")[0] for ln in lines]
    assert done == [f"sweep: {i}/6" for i in range(7)], lines  # 0/6: it has started
    assert lines[-1].startswith("sweep: 6/6 points done, 2 failed, ")
    assert re.fullmatch(r"sweep: 6/6 points done, 2 failed, \d+ running \(\d+ s\)", lines[-1])


def test_the_summary_counts_points_that_failed_before_once(tmp_path, capsys):
    """A rerun skips the points that failed before and still counts them failed: its
    summary said "skipped 6 (already done), failed 2" of 6 points."""
    spec = make_spec(tmp_path, fail=True)
    code, err = sweep_run_exit(spec, "fake_point", capsys)
    assert code == 1 and "6 points, ran 6, skipped 0 (already done), failed 2," in err
    code, err = sweep_run_exit(spec, "fake_point", capsys)
    assert code == 1
    assert "6 points, ran 0, skipped 6 (already run: 4 done, 2 failed), failed 2," in err
    report = run_sweep(
        load_spec(spec, small=False), workers=0, point_fn=sweep_pointfns.fake_point, progress=False
    )
    assert (report.skipped, report.failed_before, report.failed) == (6, 2, 2)


def test_small_on_a_spec_without_a_small_variant_is_said(tmp_path, capsys):
    """`--small` on a spec it changes nothing in ran the full-size sweep without a word."""
    spec = make_spec(tmp_path)
    args = ["sweep", "status", str(spec), "--small", "--point-fn", "sweep_pointfns:fake_point"]
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code in (0, None)
    assert err == f"warning: --small: {spec} has no small variant (no small section, no " + (
        "workload's small values): it runs as written\n"
    )
    spec.write_text(spec.read_text() + "small: {seeds: [0]}\n")
    with pytest.raises(SystemExit):
        main(args)
    assert capsys.readouterr().err == ""


def test_counts_of_one_are_singular(tmp_path, capsys):
    """A sweep of one point said "1 points", "1 point(s) failed ... retry them", "1 rows"."""
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "name: one\nworkloads: [{name: w, generator: fake, params: {n: 10, fail: true}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [ws]\nseeds: [1]\n"
    )
    code, err = sweep_run_exit(spec, "fake_point", capsys)
    assert code == 1 and "one: 1 point, ran 1, " in err
    assert "\n1 point failed; run again with --retry-failed to retry it\n" in err
    with pytest.raises(SystemExit):
        main(["sweep", "status", str(spec), "--point-fn", "sweep_pointfns:fake_point"])
    assert "one: 1 point: 0 done, 1 failed, 0 missing" in capsys.readouterr().out


def test_a_point_failing_under_retry_failed_points_to_its_error_not_to_retry_failed(
    tmp_path, capsys
):
    """A point that failed again under --retry-failed was told "run again with
    --retry-failed", which fails the same way until its cause is fixed."""
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "name: one\nworkloads: [{name: w, generator: fake, params: {n: 10, fail: true}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [ws]\nseeds: [1]\n"
    )
    sweep_run_exit(spec, "fake_point", capsys)
    args = ["sweep", "run", str(spec), "--workers", "0", "--no-progress", "--retry-failed"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--point-fn", "sweep_pointfns:fake_point"])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "run again with --retry-failed" not in err
    out = tmp_path / "results" / "one"
    last = err.splitlines()[-1]
    assert last.startswith("1 point failed, with --retry-failed; each error and its traceback")
    assert f"{out}/points/ID/row.json" in last and "fix the cause before retrying it" in last
    with pytest.raises(SystemExit):
        main(["results", "show", str(tmp_path / "results" / "one")])
    assert capsys.readouterr().out.splitlines()[-1].startswith("1 row (")


def test_full_disk_for_the_results_table_is_reported_not_fatal(tmp_path, monkeypatch, capsys):
    """A disk full when the sweep wrote results.parquet at its end ended `sweep run` with
    exit status 2 (a bad input's) and without its summary, hiding the points it had left
    pending for the same reason; the table is derived and any later reader rebuilds it."""
    import errno

    from simsched.errors import OutputError
    from simsched.experiments import runner

    def consolidate(out_dir):
        raise OutputError(f"{out_dir}/results.parquet: cannot write (no space)", errno.ENOSPC)

    monkeypatch.setattr(runner, "consolidate", consolidate)
    spec = make_spec(tmp_path)
    code, err = sweep_run_exit(spec, "fake_point", capsys)
    assert code == 1
    assert "6 points, ran 6" in err
    assert "results.parquet: cannot write (no space)" in err and "rebuilt" in err
    monkeypatch.undo()
    assert len(load_results(load_spec(spec, small=False).out_dir)) == 6


def test_full_disk_cli_message(tmp_path, monkeypatch, capsys):
    flag = tmp_path / "disk-is-full"
    flag.touch()
    monkeypatch.setenv("SIMSCHED_TEST_FULL", str(flag))
    code, err = sweep_run_exit(make_spec(tmp_path), "full_disk_point", capsys)
    assert code == 1
    assert "2 points could not finish for want of disk space" in err
    assert "free space and run the command again" in err and "--retry-failed" not in err


def test_a_local_dask_cluster_of_no_worker_is_refused(tmp_path, capsys):
    """`--executor dask --workers 0` started a cluster of one worker without a word."""
    args = ["--point-fn", "sweep_pointfns:fake_point", "--executor", "dask", "--workers", "0"]
    code, _, err = run_cli(["sweep", "run", str(make_spec(tmp_path)), *args], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--workers 0 runs the points in this process, which the local executor does" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"executor": "slurm"}, "executor='slurm': use local or dask"),
        ({"executor": ["dask"]}, "executor=['dask']: use local or dask"),
        (
            {"executor": "dask", "workers": 0},
            "workers=0 runs the points in this process, which the local executor does; a "
            "local Dask cluster needs at least 1 worker",
        ),
        ({"address": "tcp://h:1"}, "address='tcp://h:1' needs executor='dask'"),
        ({"executor": "dask", "address": "h:1"}, "address='h:1': expected tcp://HOST:PORT"),
    ],
)
def test_run_sweep_names_its_arguments_not_the_options(tmp_path, kwargs, message):
    """run_sweep told a Python caller of --executor, --workers and --address, options it
    cannot give; the command line still names them (test_a_local_dask_cluster_...)."""
    loaded = load_spec(make_spec(tmp_path), small=False)
    with pytest.raises(ConfigError) as info:
        run_sweep(loaded, progress=False, **kwargs)
    assert str(info.value) == message
    assert not loaded.out_dir.exists()


@pytest.mark.parametrize("where", ["make_output_dir", "_Display"])
def test_a_failure_before_the_dask_run_closes_the_connection(tmp_path, monkeypatch, where):
    """Between connecting and handing the connection to the Dask run, a failure (or Ctrl-C)
    closes it: a local cluster's worker processes must not outlive the sweep."""
    from simsched.experiments import runner

    connection = (object(), object())
    closed = []
    monkeypatch.setattr(runner, "connect_dask", lambda address, workers: connection)
    monkeypatch.setattr(runner, "close_dask", lambda *c, interrupted: closed.append(c))

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, where, fail)
    loaded = load_spec(make_spec(tmp_path), small=False)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(loaded, executor="dask", point_fn=sweep_pointfns.fake_point, progress=False)
    assert closed == [connection]


def test_console_must_be_a_rich_console(tmp_path):
    loaded = load_spec(make_spec(tmp_path), small=False)
    with pytest.raises(ConfigError, match=r"^console='stderr': expected a rich Console"):
        run_sweep(loaded, point_fn=sweep_pointfns.fake_point, console="stderr")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "workers, message",
    [
        ("2", r"workers='2': expected an integer"),
        (None, "workers=None"),
        (-1, "workers=-1"),
        # the pool's call queue is a C-int semaphore: OverflowError with a traceback
        (2**31, r"workers=2147483648: must be between 0 and 1024"),
        (1025, r"workers=1025: must be between 0 and 1024"),
    ],
)
def test_workers_must_be_a_count(tmp_path, workers, message):
    loaded = load_spec(make_spec(tmp_path), small=False)
    with pytest.raises(ConfigError, match=message):
        run_sweep(loaded, workers=workers, progress=False)
    assert not loaded.out_dir.exists()


def test_the_workers_option_names_itself_and_the_runners_bound(tmp_path, capsys):
    """`sweep run --workers 5000` said "workers=5000: must be between 0 and 1024"."""
    from simsched.experiments.runner import MAX_WORKERS

    spec = make_spec(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["sweep", "run", str(spec), "--workers", str(MAX_WORKERS + 1)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--workers" in err and "workers=" not in err
    assert f"less than or equal to {MAX_WORKERS}" in err
    assert not (tmp_path / "results").exists()


def test_a_spec_path_is_not_a_loaded_spec(tmp_path):
    path = str(make_spec(tmp_path))
    for call in (run_sweep, sweep_status):
        with pytest.raises(ConfigError, match=r"loaded=.*: expected a loaded spec"):
            call(path)


def test_points_and_point_fn_are_checked(tmp_path):
    loaded = load_spec(make_spec(tmp_path), small=False)
    with pytest.raises(ConfigError, match=r"point_fn=5: expected a function of one point"):
        run_sweep(loaded, point_fn=5, progress=False)
    for points, message in (
        (5, r"points=5: expected points of the spec"),
        ("p0", r"points='p0': expected points of the spec"),
        ([loaded.points()[0].id], r"points: .* is not a point of the spec"),
        # another spec's points ran into this sweep's folder
        (
            load_spec(make_spec(tmp_path), small=False, sets=["seeds=[5]"]).points(),
            r"points: .* / seed 5 is not a point of .* as loaded",
        ),
    ):
        with pytest.raises(ConfigError, match=message):
            run_sweep(loaded, points=points, progress=False)
    assert not loaded.out_dir.exists()


def test_a_point_function_workers_cannot_import_is_refused_before_any_point(tmp_path, monkeypatch):
    """A lambda or a function defined inside another failed with a pickling error once
    the first point was handed to a worker; one defined in a notebook (module __main__
    without a file) killed worker after worker."""
    import types

    loaded = load_spec(make_spec(tmp_path), small=False)

    def local_point(point, run_dir):
        return sweep_pointfns.fake_point(point, run_dir)

    message = "worker processes cannot import it .* or give workers=0"
    with pytest.raises(ConfigError, match=rf"^point_fn=.*<locals>.<lambda>: {message}"):
        run_sweep(loaded, workers=1, point_fn=lambda p, d: {}, progress=False)
    with pytest.raises(ConfigError, match=rf"^point_fn=.*<locals>.local_point: {message}"):
        run_sweep(loaded, workers=2, point_fn=local_point, progress=False)
    notebook = types.ModuleType("__main__")  # a kernel's: no __file__
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    in_notebook = types.FunctionType(
        sweep_pointfns.fake_point.__code__, sweep_pointfns.fake_point.__globals__, "fake_point"
    )
    in_notebook.__module__ = "__main__"
    notebook.fake_point = in_notebook
    with pytest.raises(ConfigError, match=rf"^point_fn=fake_point: {message}"):
        run_sweep(loaded, workers=1, point_fn=in_notebook, progress=False)
    # a partial pickles by reference to what it wraps: that is what a worker imports
    with pytest.raises(ConfigError, match=rf"^point_fn=partial\(fake_point\): {message}"):
        run_sweep(loaded, workers=1, point_fn=functools.partial(in_notebook), progress=False)
    assert not loaded.out_dir.exists()  # refused before any point started
    monkeypatch.undo()
    # in this process it needs no importing
    assert run_sweep(loaded, workers=0, point_fn=local_point, progress=False).ran == 6


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_status_refuses_an_output_folder_run_refuses(tmp_path, capsys):
    """status counted every point "missing" in /proc/x, a folder run cannot create, and
    exited 0; it now refuses it with run's own line."""
    spec = str(make_spec(tmp_path))
    fn = ["--point-fn", "sweep_pointfns:fake_point"]
    outs = ["--set", "out=/proc/simsched-status-test"]
    code, _, run_err = run_cli(["sweep", "run", spec, "--workers", "0", *fn, *outs], capsys)
    assert code == 2
    code, out, err = run_cli(["sweep", "status", spec, *fn, *outs], capsys)
    assert (code, out, err) == (2, "", run_err)
    # a folder that can be made is left unmade
    outs = ["--set", f"out={tmp_path / 'new' / 'sub'}"]
    code, out, _ = run_cli(["sweep", "status", spec, *fn, *outs], capsys)
    assert code in (0, None) and "6 missing" in out
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--where", "workload=zz"], "--where"),
        (["--columns", "workload"], "--columns"),
        (["--format", "json"], "--format"),
    ],
)
def test_list_columns_refuses_the_row_options(tmp_path, capsys, extra, named):
    """--list-columns printed every name whatever --where, --columns or --format said."""
    from simsched.experiments.store import save_row

    save_row(tmp_path, "a", {"point_id": "a", "workload": "w", "status": "ok"})
    code, out, _ = run_cli(["results", "show", str(tmp_path), "--list-columns"], capsys)
    assert code in (0, None) and "workload" in out.split()
    code, out, err = run_cli(["results", "show", str(tmp_path), "--list-columns", *extra], capsys)
    assert (code, out) == (2, "")
    assert (
        err
        == f"simsched: error: --list-columns prints every column's name and takes no {named} (drop one of them)\n"
    )
