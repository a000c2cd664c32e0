"""One sweep point: its record and row, its point function, its files when it fails."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
import sweep_pointfns
from sweep_helpers import fib_sweep, main_exit, make_spec

from simsched.errors import ConfigError, command_line
from simsched.experiments import load_results, load_spec, run_sweep, sweep_status
from simsched.experiments.point import execute_point, resolve_point_function


def test_record_fields_merge_with_point_columns(tmp_path):
    loaded = load_spec(make_spec(tmp_path), small=False)
    point = loaded.points()[0]
    row, ran = execute_point(
        point.to_dict(), str(loaded.out_dir), lambda p, d: {"seed": p.seed, "machine": "{}", "x": 1}
    )
    assert ran
    assert row["seed"] == point.seed and "run.seed" not in row  # equal values merge
    assert row["machine"] == "itrs-scaling-1" and row["run.machine"] == "{}"  # clashes kept
    assert row["x"] == 1 and row["status"] == "ok"
    row2, ran2 = execute_point(point.to_dict(), str(loaded.out_dir), sweep_pointfns.fake_point)
    assert not ran2 and row2 == row


def test_a_row_records_its_cost_and_the_hosts_speed(tmp_path):
    """A study's cost could not be read beside how fast the host was: the same code ran
    2.6-3.4x slower on this host one morning than that afternoon."""
    loaded = load_spec(make_spec(tmp_path), small=False)
    point = loaded.points()[0]

    def busy(p, d):
        t = time.process_time()
        while time.process_time() - t < 0.2:
            pass
        return {"x": 1}

    row, ran = execute_point(point.to_dict(), str(loaded.out_dir), busy)
    assert ran and row["status"] == "ok"
    assert 0.2 <= row["point_cpu_s"] < 5 and 0.2 <= row["point_wall_s"]
    assert row["host_python_ms"] > 0 and row["host_gather_ms"] > 0
    assert row["point_loadavg_1m"] >= 0
    assert json.loads((loaded.out_dir / "points" / point.id / "row.json").read_text()) == row


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1, 2], "returned list, expected a dict of metrics"),
        (None, "returned NoneType, expected a dict of metrics"),
        ({1: 2}, "the key 1 (int); its keys become column names"),
        ({"x": 2**64}, f"returned x={2**64}, beyond a 64-bit integer"),
        # a lone surrogate (a byte that is not UTF-8 in a file name): the table could not
        # hold it, and this sweep and every later `results show` ended in a traceback
        ({"note": "a\udcff"}, "returned 'note'='a\\udcff': text that is not UTF-8"),
        ({"a\udcff": 1}, "returned 'a\\udcff'=1: text that is not UTF-8"),
    ],
)
def test_a_point_function_returning_no_record_fails_its_point(tmp_path, result, message):
    loaded = load_spec(make_spec(tmp_path), small=False)
    # the runner used to crash on the int key, writing the row
    report = run_sweep(loaded, workers=0, point_fn=lambda p, d: result, progress=False)
    assert (report.ran, report.failed) == (6, 6)
    assert all(
        error.startswith("TypeError: the point function returned ") and message in error
        for _, error in report.failures
    )


def test_a_point_function_that_calls_sys_exit_fails_its_point(tmp_path):
    """sys.exit(0) in a point function ended the whole sweep with status 0, its points left
    undone and nothing said."""
    loaded = load_spec(make_spec(tmp_path), small=False)

    def exits(p, d):
        raise SystemExit(0)

    report = run_sweep(loaded, workers=0, point_fn=exits, progress=False)
    assert (report.ran, report.failed) == (6, 6)
    assert all("called sys.exit(0); raise an exception" in e for _, e in report.failures)
    assert load_results(loaded.out_dir)["status"].eq("error").all()


def test_default_point_function_failure_is_a_row(tmp_path, monkeypatch):
    # A trace file that is not a trace: the default simulation fails before simulating.
    # The spec check refuses such a file up front, so it is skipped here, as if the file
    # had been replaced after the check.
    import simsched.experiments.spec

    monkeypatch.setattr(simsched.experiments.spec, "_check_trace_file", lambda *a, **k: None)
    (tmp_path / "junk.sst").write_bytes(b"not a trace at all" * 10)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: nt\nworkloads: [junk.sst]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n"
    )
    loaded = load_spec(spec, small=False)
    report = run_sweep(loaded, workers=0, progress=False)
    assert report.failed == 1
    assert "junk.sst" in report.failures[0][1]


def test_resolve_point_function():
    assert resolve_point_function(None) is None
    assert resolve_point_function("sweep_pointfns:fake_point") is sweep_pointfns.fake_point
    for bad in ("nocolon", "no_such_module_xyz:f", "sweep_pointfns:nope"):
        with pytest.raises(ConfigError):
            resolve_point_function(bad)


def test_default_point_function_simulates(tmp_path):
    """End to end through simsched.run: a tiny generated trace under ws and pdf."""
    loaded = fib_sweep(tmp_path, "schedulers: [ws, pdf]\n")
    report = run_sweep(loaded, workers=0, progress=False)
    assert (report.ran, report.failed) == (2, 0), report.failures
    df = load_results(loaded.out_dir)
    assert set(df["scheduler"]) == {"ws", "pdf"}
    assert (df["makespan_cycles"] > 0).all() and (df["instructions"] > 0).all()
    for pid in df["point_id"]:
        pdir = loaded.out_dir / "points" / pid
        assert (pdir / "config.json").is_file() and (pdir / "result.json").is_file()
    assert len(list((loaded.out_dir / "traces").glob("*.sst"))) == 1  # made once, shared


def test_simulate_point_takes_its_folder_as_any_path(tmp_path):
    """Only a pathlib.Path was taken: a str failed with a TypeError at ``run_dir / name``."""
    from simsched.experiments import simulate_point

    point = fib_sweep(tmp_path, "schedulers: [ws]\n").points()[0]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = simulate_point(point, str(run_dir))
    assert record["status"] == "ok" and record["makespan_cycles"] > 0
    assert (run_dir / "config.json").is_file() and (run_dir / "result.json").is_file()
    with pytest.raises(ConfigError, match="^run_dir=None: expected a path"):
        simulate_point(point, None)


def test_a_point_the_sampler_refuses_keeps_its_configuration(tmp_path):
    """A sampled point on a trace without iterations fails; the failed point's folder had
    its record but not its resolved configuration.  (A sweep refuses such a trace file
    before any point runs, so the point is run here as a worker runs it.)"""
    from simsched.experiments.point import simulate_point
    from simsched.workloads import generate

    generate("fib", tmp_path / "fib.sst", n=8, cutoff=2)
    spec = tmp_path / "real.yaml"
    spec.write_text(
        "name: real\nworkloads: [{name: fib, trace: fib.sst}]\nmachines: [itrs-scaling-2]\n"
        "schedulers: [ws]\nsample_iterations: 2\n"
    )
    loaded = load_spec(spec, small=False)
    with pytest.raises(ConfigError, match="fib.sst: has no iterations, so sample_iterations"):
        run_sweep(loaded, workers=0, progress=False)
    (point,) = loaded.points()
    pdir = tmp_path / "point"
    pdir.mkdir()
    with pytest.raises(ConfigError, match="has no iterations"):
        simulate_point(point, pdir)
    record = json.loads((pdir / "result.json").read_text())
    config = json.loads((pdir / "config.json").read_text())
    assert record["status"] == "error" and config["sample_iterations"] == 2
    assert config["machine_resolved"]["cores_per_socket"] == 2


def test_a_point_failing_before_its_run_keeps_its_configuration_and_record(
    tmp_path, monkeypatch, capsys
):
    """A trace that cannot be made (before simsched.run), then one that is no trace (in
    run, before it resolved the configuration): each failed point's folder had only
    point.json and row.json, or result.json without config.json."""
    import simsched.workloads

    def broken(*args, **kwargs):
        raise RuntimeError("generator crashed")

    loaded = fib_sweep(tmp_path, "schedulers: [ws]\n")
    monkeypatch.setattr(simsched.workloads, "generate", broken)
    report = run_sweep(loaded, workers=0, progress=False)
    assert report.failed == 1 and "generator crashed" in report.failures[0][1]
    pdir = loaded.out_dir / "points" / report.failures[0][0]
    record = json.loads((pdir / "result.json").read_text())
    config = json.loads((pdir / "config.json").read_text())
    assert record["status"] == "error" and record["error"] == "RuntimeError: generator crashed"
    assert record["scheduler"] == "ws" and record["cores"] == 2 and "traceback" in record
    assert record["params"] == {} and record["machine_config"]["cores_per_socket"] == 2
    assert config["scheduler"] == "ws" and config["trace"] is None
    assert config["machine_resolved"]["cores_per_socket"] == 2
    # the retried point fails in the run, after the trace: its own files, none of before
    monkeypatch.undo()
    junk = tmp_path / "junk.sst"
    junk.write_bytes(b"not a trace at all" * 10)
    monkeypatch.setattr("simsched.trace.recipes.ensure_trace", lambda *a, **k: junk)
    report = run_sweep(loaded, workers=0, progress=False, retry_failed=True)
    assert report.failed == 1 and "junk.sst" in report.failures[0][1]
    record = json.loads((pdir / "result.json").read_text())
    config = json.loads((pdir / "config.json").read_text())
    assert "junk.sst" in record["error"] and config["trace"] == str(junk)
    # a user's mistake is its message in the row too, as in result.json: no type, no
    # traceback (they read "TraceFormatError: ..." with a traceback beside it)
    row = json.loads((pdir / "row.json").read_text())
    assert row["error"] == record["error"] and "traceback" not in row
    assert sorted(p.name for p in pdir.iterdir()) == [
        "config.json",
        "point.json",
        "result.json",
        "row.json",
    ]
    assert main_exit(["results", "show", str(loaded.out_dir)]) == 0
    assert "junk.sst" in capsys.readouterr().out
    assert sweep_status(loaded)["failed"] == 1


def test_a_rerun_point_removes_the_temporaries_of_a_killed_write(tmp_path):
    """A worker killed mid-write (kill -9; a Dask worker stopped after Ctrl-C) leaves the
    hidden temporary of its row.json or timeline.npz; they stayed for ever."""
    from simsched.experiments.store import point_dir

    loaded = load_spec(make_spec(tmp_path), small=False)
    point = loaded.points()[0]
    pdir = point_dir(loaded.out_dir, point.id)
    pdir.mkdir(parents=True)
    left = [".row.json.mv1hh8l7.tmp.json", ".timeline.npz.x8d45fh1.tmp.npz", ".a.b_c3_567.tmp"]
    kept = ["notes.txt", ".hidden", ".row.json.short.tmp.json"]
    for name in left + kept:
        (pdir / name).write_text("x")
    report = run_sweep(loaded, workers=0, point_fn=sweep_pointfns.fake_point, progress=False)
    assert report.ran == 6
    names = {p.name for p in pdir.iterdir()}
    assert not names & set(left) and set(kept) | {"point.json", "row.json"} <= names


@pytest.mark.parametrize("name", ["point.json", "row.json"])
def test_full_disk_for_the_runners_own_files_leaves_the_point_pending(tmp_path, monkeypatch, name):
    """A disk that filled up while the runner wrote a point's point.json or row.json (not
    in the point function) ended the whole sweep with exit status 2, the status of a bad
    input, instead of leaving the point pending as a full disk does elsewhere."""
    import errno

    from simsched.errors import OutputError
    from simsched.experiments import point, store
    from simsched.files import write_json_atomic

    full = {"on": True}

    def writer(path, obj, **kw):
        if full["on"] and Path(path).name == name:
            raise OutputError(f"{path}: cannot write (no space left on the device)", errno.ENOSPC)
        return write_json_atomic(path, obj, **kw)

    monkeypatch.setattr(point, "write_json_atomic", writer)
    monkeypatch.setattr(store, "write_json_atomic", writer)
    loaded = load_spec(make_spec(tmp_path), small=False)
    fn = sweep_pointfns.fake_point
    report = run_sweep(loaded, workers=0, point_fn=fn, progress=False)
    assert (report.ran, report.failed, len(report.interrupted)) == (0, 0, 6)
    assert all(name in msg and "no space" in msg for _, msg in report.interrupted)
    assert sweep_status(loaded)["missing"] == 6
    full["on"] = False  # space freed: a plain rerun finishes them
    again = run_sweep(loaded, workers=0, point_fn=fn, progress=False)
    assert (again.ran, again.failed, again.interrupted) == (6, 0, [])


def test_resolve_point_function_names_the_argument():
    """A Python caller was told of --point-fn, the command line's option."""
    with pytest.raises(ConfigError, match="^name='nocolon': expected MODULE:FUNCTION$"):
        resolve_point_function("nocolon")
    with pytest.raises(ConfigError, match=r"^name=5: expected MODULE:FUNCTION \(a text\)"):
        resolve_point_function(5)  # it failed with "'int' object has no attribute 'partition'"
    with command_line(), pytest.raises(ConfigError, match="^--point-fn 'nocolon': expected"):
        resolve_point_function("nocolon")


def _spoilt(point, **parts):
    """``point`` with parts of it replaced; a value that is a dict is merged into the part."""
    return replace(
        point,
        **{k: {**getattr(point, k), **v} if isinstance(v, dict) else v for k, v in parts.items()},
    )


def test_simulate_point_refuses_what_is_no_point_naming_the_part(tmp_path):
    """A point made or edited by hand failed deep in its run: AttributeError ('dict' object
    has no attribute 'machine'), KeyError ('resolved'), TypeError, or pydantic's many-line
    ValidationError."""
    from simsched.experiments import simulate_point

    point = fib_sweep(tmp_path, "schedulers: [ws]\n").points()[0]
    resolved = point.machine["resolved"]
    cases = [
        (None, "^point=None: expected a Point of a spec"),
        (point.to_dict(), r"^point=\{.*\}: expected a Point of a spec"),
        (_spoilt(point, workload="heat"), "^point.workload='heat': expected a mapping"),
        (replace(point, workload={"label": "x"}), "^point.workload: no key 'kind'"),
        (_spoilt(point, workload={"kind": "magic"}), "^point.workload: kind 'magic' is not"),
        (
            replace(point, workload={"label": "x", "kind": "generator"}),
            "^point.workload: a generator recipe has no key 'generator'",
        ),
        (_spoilt(point, scheduler={"params": None}), r"^point.scheduler\['params'\]=None:"),
        (_spoilt(point, scheduler={"name": 3}), r"^point.scheduler\['name'\]=3: expected"),
        (
            _spoilt(point, machine={"resolved": {**resolved, "sockets": "2"}}),
            r"^point.machine\['resolved'\]\['sockets'\]='2': expected an integer",
        ),
        (
            _spoilt(point, machine={"resolved": {**resolved, "caches": None}}),
            r"^point.machine\['resolved'\]\['caches'\]=None: expected the list of cache",
        ),
        (replace(point, seed=-1), "^point.seed=-1: must be between 0 and"),
        (replace(point, seed="1"), "^point.seed='1': expected an integer"),
        (replace(point, id="../x"), r"^point.id='\.\./x': expected a point id"),
        (replace(point, spec_dir=None), "^point.spec_dir=None: expected a path"),
        (replace(point, sample_iterations=1), "^point.sample_iterations=1: must be at least 2"),
        (replace(point, sample_precision="1"), "^point.sample_precision='1': expected a"),
        # shaped as a point, but no machine: pydantic's error was raised as it is
        (
            _spoilt(point, machine={"resolved": {**resolved, "bogus": 1}}),
            r"^point.machine\['resolved'\]: bogus: unknown key",
        ),
    ]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for bad, message in cases:
        with pytest.raises(ConfigError, match=message):
            simulate_point(bad, run_dir)


def test_execute_point_refuses_what_is_no_point_naming_the_argument(tmp_path):
    """KeyError: 'seed', TypeError: missing 1 required positional argument, AttributeError:
    'NoneType' object has no attribute 'partition'..."""
    loaded = load_spec(make_spec(tmp_path), small=False)
    data = loaded.points()[0].to_dict()
    out = str(loaded.out_dir)
    fake = sweep_pointfns.fake_point
    cases = [
        ((None, out), "^point_data=None: expected a point as a dict"),
        (({k: v for k, v in data.items() if k != "seed"}, out), "^point_data: no key 'seed'"),
        (({**data, "workload": "x"}, out), "^point_data.workload='x': expected a mapping"),
        (({**data, "machine": {}}, out), "^point_data.machine: no key 'label'"),
        ((data, None), "^out_dir=None: expected a path"),
        ((data, out, 3), "^point_fn=3: expected a function or None"),
        ((data, out, fake, "no"), "^retry_failed='no': expected True or False"),
        ((data, out, fake, False, 1), "^rerun_stale=1: expected True or False"),
    ]
    for args, message in cases:
        with pytest.raises(ConfigError, match=message):
            execute_point(*args)
    assert not (loaded.out_dir / "points").exists()  # nothing ran
    row, ran = execute_point(data, loaded.out_dir, fake)  # any path, as run_sweep's
    assert ran and row["status"] == "ok"


def spelling_point(point, run_dir):
    """A point function returning how messages name an argument where it runs."""
    from simsched.errors import spelled

    return {"said": spelled("python", "command")}


def test_a_point_names_its_spec_keys_in_the_commands_process_too(tmp_path):
    """A point run in the command's own process (``--workers 0``) named options, as the
    command line does, where a worker process names the spec's keys: a record's error
    text depended on the worker count."""
    loaded = load_spec(make_spec(tmp_path), small=False)
    with command_line():
        row, ran = execute_point(loaded.points()[0].to_dict(), loaded.out_dir, spelling_point)
    assert ran and row["said"] == "python"


def test_a_damaged_trace_of_the_sweeps_cache_is_removed_and_made_again(tmp_path):
    """A cached trace whose digest no longer matched failed its points on every retry, and
    nothing said to delete it."""
    from simsched.trace.format import HEADER_SIZE

    first = fib_sweep(tmp_path, "schedulers: [ws]\n")
    assert run_sweep(first, workers=0, progress=False).failed == 0
    (cached,) = first.trace_cache.glob("*.sst")
    data = bytearray(cached.read_bytes())
    data[HEADER_SIZE + 5] ^= 0xFF  # inside the first chunk: the header stays sound
    cached.write_bytes(bytes(data))
    more = fib_sweep(tmp_path, "schedulers: [ws, pdf]\n")
    report = run_sweep(more, workers=0, progress=False)
    assert report.failed == 1 and not cached.exists()
    assert report.failures[0][1].endswith(
        "(a damaged trace of the sweep's cache: removed, so that running the point again "
        "makes it anew)"
    )
    again = run_sweep(more, workers=0, progress=False, retry_failed=True)
    assert again.failed == 0 and again.ran == 1 and cached.exists()
