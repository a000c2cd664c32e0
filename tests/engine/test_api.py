"""simsched.run / simsched.compare: records, out_dir files, errors, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

import simsched
from simsched.engine.record import NESTED_FIELDS, nest_fields
from simsched.errors import ConfigError
from simsched.schedulers import scheduler_names
from simsched.workloads import generate


@pytest.fixture(scope="module")
def ms_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("ms") / "ms.sst"
    generate("mergesort", path, n=16384, grain=512)
    return path


def test_record_fields_and_consistency(ms_trace, tmp_path):
    r = simsched.run(ms_trace, "itrs-scaling-4", "ws", seed=1, out_dir=tmp_path / "out")
    rec = r.record
    for key in (
        "status",
        "makespan_cycles",
        "instructions",
        "refs",
        "L1_accesses",
        "L1_hits",
        "L1_misses",
        "L2_accesses",
        "L2_hits",
        "L2_misses",
        "mpki",
        "offchip_bytes",
        "mem_utilization",
        "dram_local",
        "dram_remote",
        "steal_attempts",
        "steals",
        "idle_cycles",
        "speedup",
        "cores",
        "machine",
        "scheduler",
        "params",
        "seed",
        "trace_digest",
        "trace_program",
        "simsched_version",
        "wall_s",
        "machine_config",
    ):
        assert key in rec, key
    assert rec["status"] == "ok" and rec["cores"] == 4 and rec["machine"] == "itrs-scaling-4"
    for lv in ("L1", "L2"):
        assert rec[f"{lv}_hits"] + rec[f"{lv}_misses"] == rec[f"{lv}_accesses"]
    assert rec["L1_accesses"] >= rec["refs"]
    assert rec["mpki"] == pytest.approx(1000 * rec["L2_misses"] / rec["instructions"])
    assert 1.0 < rec["speedup"] <= 4.0
    assert rec["steals"] <= rec["steal_attempts"]
    assert json.loads(rec["machine_config"])["cores_per_socket"] == 4
    # Files next to each other, JSON and a pickle-free timeline.
    out = tmp_path / "out"
    written = json.loads((out / "result.json").read_text())
    assert written["machine_config"]["cores_per_socket"] == 4  # an object, not JSON text
    assert written == json.loads(json.dumps(nest_fields(rec)))
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["scheduler"] == "ws" and cfg["seed"] == 1
    with np.load(out / "timeline.npz", allow_pickle=False) as z:
        assert z["core"].shape == (rec["strands"],)
        assert int(z["makespan"][0]) == rec["makespan_cycles"]
    import pyarrow.parquet as pq

    row = pq.read_table(r.to_parquet(tmp_path / "r.parquet")).to_pylist()
    assert row == [rec]
    tl = r.timeline
    assert len(tl) == 4 and sum(len(a) for a in tl) == rec["strands"]
    for a in tl:
        assert np.all(a["start"][1:] >= a["end"][:-1])


def test_same_seed_identical_record(ms_trace):
    a = simsched.run(ms_trace, "itrs-scaling-4", "ws", seed=3).record
    b = simsched.run(ms_trace, "itrs-scaling-4", "ws", seed=3).record
    a.pop("wall_s")
    b.pop("wall_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_compare_pdf_no_more_l2_misses_than_ws(ms_trace):
    # An L2 smaller than the data, so that capacity misses depend on the schedule.
    over = {"caches.L2.size": "64KB", "caches.L2.assoc": 16}
    res = simsched.compare(ms_trace, "itrs-scaling-4", ["ws", "pdf"], seeds=2, overrides=over)
    assert [r.record["scheduler"] for r in res] == ["ws", "ws", "pdf"]
    ws = np.mean([r.record["L2_misses"] for r in res if r.record["scheduler"] == "ws"])
    pdf = res[-1].record["L2_misses"]
    assert pdf <= ws


def test_unknown_scheduler_and_param(ms_trace, tmp_path):
    with pytest.raises(ConfigError, match="known: .*pdf.*ws"):
        simsched.run(ms_trace, "itrs-scaling-4", "nope")
    with pytest.raises(ConfigError, match="spawn_policy"):
        simsched.run(ms_trace, "itrs-scaling-4", "ws", {"spawn_policy": "sideways"})
    with pytest.raises(ConfigError, match="unknown parameter"):
        simsched.run(ms_trace, "itrs-scaling-4", "pdf", {"x": 1}, out_dir=tmp_path / "e")
    rec = json.loads((tmp_path / "e" / "result.json").read_text())
    assert rec["status"] == "error" and "unknown parameter" in rec["error"]


def test_failed_run_writes_error_record(tmp_path):
    bad = tmp_path / "bad.sst"
    bad.write_bytes(b"not a trace at all" * 10)
    with pytest.raises(simsched.errors.SimschedError):
        simsched.run(bad, "itrs-scaling-4", "ws", out_dir=tmp_path / "o")
    rec = json.loads((tmp_path / "o" / "result.json").read_text())
    assert rec["status"] == "error" and "bad.sst" in rec["error"]
    # and its configuration, resolved before the trace was refused (there was none)
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    assert config["trace"] == str(bad) and config["scheduler"] == "ws"
    assert config["machine_resolved"]["cores_per_socket"] == 4


def test_a_failed_run_leaves_no_earlier_runs_files_beside_its_record(ms_trace, tmp_path):
    """A run that failed before writing its config.json (an unknown scheduler) or its
    timeline (a trace that is no trace) left an earlier run's beside its failure record:
    results and plots took them for the failed run's."""
    from simsched.jobset import JobEntry, JobSet

    out = tmp_path / "o"
    simsched.run(ms_trace, "itrs-scaling-2", "ws", out_dir=out, speedup=False)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "result.json", "timeline.npz"]
    with pytest.raises(ConfigError, match="known: "):
        simsched.run(ms_trace, "itrs-scaling-2", "nope", out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["result.json"]
    assert json.loads((out / "result.json").read_text())["status"] == "error"
    simsched.run(ms_trace, "itrs-scaling-2", "ws", out_dir=out, speedup=False)
    with pytest.raises(ConfigError, match="^job 'a': "):
        js = JobSet(jobs=[JobEntry("a", tmp_path / "no.sst", "ws", {}, 0, 0)])
        simsched.run_jobs(js, "itrs-scaling-2", controller="equi", out_dir=out)
    # its own configuration stays, the earlier run's timeline goes
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "result.json"]
    assert json.loads((out / "config.json").read_text())["jobs"][0]["name"] == "a"


def test_every_json_text_field_is_declared_nested(ms_trace):
    """Each scheduler's record: every field holding JSON text is in NESTED_FIELDS."""
    for name in scheduler_names():
        rec = simsched.run(ms_trace, "opteron-8380-4x4", name, seed=0).record
        for key, value in rec.items():
            if isinstance(value, str) and value.startswith(("[", "{")):
                assert key in NESTED_FIELDS, f"{name}: {key}"


# -- one pipeline: run is run_jobs of a one-job set -----------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 2**41}, "window=2199023255552: must be between 0 and 1099511627776"),
        ({"window": 2.7}, "window=2.7: expected an integer"),
        ({"window": -1}, "window=-1: must be between 0"),
        ({"window": True}, "window=True: expected an integer"),
        ({"seed": -1}, "seed=-1: must be between 0"),
        ({"seed": 2.5}, "seed=2.5: expected an integer"),
        ({"progress": "yes"}, "progress='yes': expected True or False"),
        ({"progress": 1}, "progress=1: expected True or False"),
    ],
)
def test_run_and_run_jobs_refuse_the_same_options_the_same_way(ms_trace, tmp_path, kwargs, message):
    """Before, run(window=2**41) raised while run_jobs accepted it, and run_jobs(window=2.7)
    recorded 2; now both refuse with the same line, before writing anything."""
    jobs = {"jobs": [{"trace": str(ms_trace)}], "controller": "all"}
    with pytest.raises(ConfigError, match=f"^{message}"):
        simsched.run(ms_trace, "itrs-scaling-2", "ws", **kwargs)
    with pytest.raises(ConfigError, match=f"^{message}"):
        simsched.run_jobs(jobs, "itrs-scaling-2", out_dir=tmp_path / "o", **kwargs)
    assert not (tmp_path / "o").exists()


def test_run_refuses_a_speedup_that_is_no_flag(ms_trace):
    # "no" is true: the baseline was computed and the speedup recorded.
    with pytest.raises(ConfigError, match="^speedup='no': expected True or False"):
        simsched.run(ms_trace, "itrs-scaling-2", "ws", speedup="no")
    rec = simsched.run(ms_trace, "itrs-scaling-2", "ws", speedup=np.bool_(False)).record
    assert rec["speedup"] == 0.0


def test_to_parquet_refuses_what_is_no_path(ms_trace, tmp_path):
    r = simsched.run(ms_trace, "itrs-scaling-2", "ws", speedup=False)
    for bad, shown in ((None, "None"), (5, "5"), ("", "''")):
        with pytest.raises(ConfigError, match=f"^path={shown}: expected a path"):
            r.to_parquet(bad)
    assert r.to_parquet(str(tmp_path / "r.parquet")) == tmp_path / "r.parquet"


def test_run_records_what_run_jobs_of_one_job_records(ms_trace):
    """The same replay: one job under 'all' with the same seed and window gives the same
    strands, cycles and counters in both records."""
    one = simsched.run(ms_trace, "itrs-scaling-4", "ws", seed=3, window=50, speedup=False)
    jobs = {"jobs": [{"trace": str(ms_trace), "scheduler": "ws"}], "controller": "all"}
    many = simsched.run_jobs(jobs, "itrs-scaling-4", seed=3, window=50)
    a, b = one.record, many.record
    job = b["jobs"][0]
    assert a["makespan_cycles"] == b["makespan_cycles"] == job["finish"]
    assert a["steal_attempts"] == job["steal_attempts"] and a["steals"] == job["steals"]
    for key in ("window", "seed", "machine", "cores", "sockets", "code_identity"):
        assert a[key] == b[key], key
    assert json.loads(a["params"]) == job["params"] == {"spawn_policy": "child-first"}
    np.testing.assert_array_equal(one.engine_result.strand_end, many.replay.jobs[0].strand_end)
    with pytest.raises(ConfigError, match="quantum=2.5: expected an integer"):
        simsched.run_jobs(jobs, "itrs-scaling-4", quantum=2.5)


# -- bad inputs of the Python API: one line naming the parameter ---------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": [1]}, r"params=\[1\]: expected a mapping"),
        ({"params": {1: 2}}, "params: key 1 is not a string"),
        # a TypeError from the JSON encoder of the record, with its traceback
        ({"params": {"spawn_policy": object()}}, "params: spawn_policy=<object object at"),
        ({"overrides": "cores=2"}, "overrides='cores=2': expected a mapping"),
        ({"overrides": {1: 2}}, "overrides: key 1 is not a string"),
        ({"out_dir": 5}, r"out_dir=5: expected a path"),
        ({"out_dir": ""}, "out_dir='': expected a path, got an empty string"),
        ({"sample_precision": float("nan")}, "sample_precision=nan: must be between 0 and 100"),
    ],
)
def test_run_refuses_bad_mappings_paths_and_unused_precision(ms_trace, kwargs, message):
    """Before: a TypeError, ValueError or AttributeError from inside (params=[1],
    overrides={1: 2}), files written into the current folder (out_dir=""), or a bad
    sample_precision ignored without sample_iterations."""
    with pytest.raises(ConfigError, match=f"^{message}"):
        simsched.run(ms_trace, "itrs-scaling-2", "ws", speedup=False, **kwargs)


def test_compare_refuses_bad_scheduler_lists_and_seed(ms_trace):
    """Before: TypeError ('NoneType' object is not iterable; run() got multiple values for
    keyword argument 'seed')."""
    with pytest.raises(ConfigError, match="^schedulers=None: expected scheduler names"):
        simsched.compare(ms_trace, "itrs-scaling-2", None)
    with pytest.raises(ConfigError, match="^compare: seed=3: .*give seeds=N"):
        simsched.compare(ms_trace, "itrs-scaling-2", "ws", seed=3)
    with pytest.raises(ConfigError, match=r"^params=\['x'\]: expected a mapping"):
        simsched.compare(ms_trace, "itrs-scaling-2", "ws", params=["x"])


def test_compare_refuses_a_mapping_of_schedulers(ms_trace):
    """{"ws": 1} ran ws, its value dropped without a word."""
    for schedulers in ({"ws": 1}, {"ws": {"spawn_policy": "parent-first"}, "pdf": {}}):
        with pytest.raises(
            ConfigError,
            match=r"^schedulers=\{.*\}: expected scheduler names .*; scheduler parameters "
            "go in params=",
        ):
            simsched.compare(ms_trace, "itrs-scaling-2", schedulers)


def test_compare_refuses_an_unordered_or_byte_list_and_an_unknown_option(ms_trace):
    """A set ran in the hash seed's order; b'ws' named scheduler '119'; a misspelt option
    was run()'s TypeError, after the machine and the trace were loaded."""
    for schedulers in ({"pdf", "ws"}, frozenset({"ws"}), b"ws"):
        with pytest.raises(ConfigError, match=r"^schedulers=.*: expected scheduler names"):
            simsched.compare(ms_trace, "itrs-scaling-2", schedulers)
    with pytest.raises(ConfigError, match=r"^compare: unknown option 'windw' \(it takes "):
        simsched.compare(ms_trace, "itrs-scaling-2", "ws", windw=3)


def test_run_jobs_records_resolved_parameters_and_leaves_an_open_trace_open(ms_trace):
    """A JobSet made in Python recorded its parameters as given ({} for CAB's defaults,
    'PARENT-first', 'WS'), and run_jobs closed a Trace the caller had opened."""
    from pathlib import Path

    from simsched.jobset import JobEntry, JobSet
    from simsched.trace import open_trace

    js = JobSet([JobEntry("a", Path(ms_trace), "WS", {"spawn_policy": "PARENT-first"}, 0, 0)])
    job = simsched.run_jobs(js, "itrs-scaling-2").record["jobs"][0]
    assert (job["scheduler"], job["params"]["spawn_policy"]) == ("ws", "parent-first")
    js = JobSet([JobEntry("a", Path(ms_trace), "cab", {}, 0, 0)])
    assert simsched.run_jobs(js, "itrs-scaling-2").record["jobs"][0]["params"]["bl"] == "auto"
    with open_trace(ms_trace) as t:
        simsched.run_jobs(JobSet([JobEntry("a", t, "ws", {}, 0, 0)]), "itrs-scaling-2")
        assert not t.closed


def test_compare_refuses_one_out_dir_for_all_its_runs(ms_trace, tmp_path):
    # Every run wrote its record into the same folder: only the last one was left there.
    with pytest.raises(ConfigError, match="^compare: out_dir=.* would keep only the last run"):
        simsched.compare(ms_trace, "itrs-scaling-2", "ws,pdf", out_dir=tmp_path / "cmp")
    assert not (tmp_path / "cmp").exists()


def test_run_jobs_refuses_bad_controllers_and_job_sets(ms_trace):
    """Before: TypeError (unhashable list, a dict update sequence, Path(None)), and
    controller="" silently ran the job set's controller."""
    jobs = {"jobs": [{"trace": str(ms_trace)}], "controller": "all"}
    with pytest.raises(ConfigError, match=r"^unknown controller \['equi'\]"):
        simsched.run_jobs(jobs, "itrs-scaling-2", controller=["equi"])
    with pytest.raises(ConfigError, match="^unknown controller ''"):
        simsched.run_jobs(jobs, "itrs-scaling-2", controller="")
    with pytest.raises(ConfigError, match=r"^controller 'equi': parameters=\[1\]: expected"):
        simsched.run_jobs(jobs, "itrs-scaling-2", controller="equi", controller_params=[1])
    with pytest.raises(ConfigError, match="^job set None: expected a YAML path or a dict"):
        simsched.run_jobs(None, "itrs-scaling-2")


def test_numpy_integers_are_accepted_in_job_sets_and_overrides(ms_trace):
    """Before: 'Input should be a valid integer' for np.int64 copies, seeds and machine
    overrides; now they count as the same Python integers."""
    jobs = {"jobs": [{"trace": str(ms_trace), "copies": np.int64(2)}], "seed": np.int64(1)}
    rec = simsched.run_jobs(jobs, "itrs-scaling-2", overrides={"cores": np.int64(2)}).record
    assert len(rec["jobs"]) == 2 and rec["seed"] == 1 and rec["cores"] == 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seed", -1, r"^job set seed=-1: must be between 0 and"),
        ("seed", 2**64, r"^job set seed=18446744073709551616: must be between 0 and"),
        ("seed", 1.5, r"^job set seed=1.5: expected an integer"),
        (
            "arrival",
            -5,
            r"^job 'a': arrival=-5: must be between 0 and 1152921504606846976 \(2\^60\)",
        ),
        ("arrival", 2**62, r"^job 'a': arrival=4611686018427387904: must be between 0 and"),
    ],
)
def test_run_jobs_checks_a_job_set_made_in_python(ms_trace, field, value, message):
    """A JobSet built in Python skips the job-set schema.  Before: seed -1 failed inside
    numpy (ValueError), 2^64 and 1.5 ran and were recorded as the seed; arrival -5 ran from
    cycle 0, 2^62 reported a deadlock and larger ones raised IndexError."""
    from simsched.jobset import JobEntry, JobSet

    entry = {"arrival": value} if field == "arrival" else {}
    jobs = [JobEntry("a", ms_trace, "ws", {}, entry.get("arrival", 0), 0)]
    js = JobSet(jobs=jobs, **({"seed": value} if field == "seed" else {}))
    with pytest.raises(ConfigError, match=message):
        simsched.run_jobs(js, "itrs-scaling-2", controller="equi")


def test_run_jobs_names_the_job_of_a_missing_trace(tmp_path):
    # A JobSet made in Python skips load_jobset's check of its trace files: a missing one
    # raised FileNotFoundError from the trace reader.
    from simsched.jobset import JobEntry, JobSet

    js = JobSet(jobs=[JobEntry("a", tmp_path / "no.sst", "ws", {}, 0, 0)])
    with pytest.raises(ConfigError, match=r"^job 'a': .*no\.sst: no such trace file$"):
        simsched.run_jobs(js, "itrs-scaling-2", controller="equi")


def test_run_jobs_names_the_job_set_and_the_job_of_a_file_that_is_no_trace(tmp_path):
    """Before: "text.txt: not a simsched trace (bad magic)", naming neither."""
    from simsched.errors import TraceFormatError

    (tmp_path / "text.txt").write_text("hello\n")
    jobs = tmp_path / "j.yaml"
    jobs.write_text("jobs:\n  - {trace: text.txt, name: a}\n")
    with pytest.raises(
        TraceFormatError, match=r"^.*j\.yaml: job 'a': .*text\.txt: not a simsched trace"
    ):
        simsched.run_jobs(jobs, "itrs-scaling-2")


@pytest.mark.parametrize("key", ["seed", "status", "scheduler", "makespan_cycles", "speedup"])
def test_a_plugins_record_field_cannot_replace_the_records_own(tmp_path, key, monkeypatch):
    # A plug-in's record_fields() {"seed": ...} replaced the run's seed in its record
    # without a word, and {"scheduler": ...} left a record naming no known scheduler.
    from simsched.errors import PluginError
    from simsched.schedulers.registry import SCHEDULERS
    from simsched.schedulers.ws import WorkStealing

    cls = type(
        "Clash",
        (WorkStealing,),
        {"name": "test-clash", "aliases": (), "record_fields": lambda self: {key: 5, "mine": 1}},
    )
    monkeypatch.setattr(SCHEDULERS, "entries", dict(SCHEDULERS.entries))
    SCHEDULERS.register(cls)
    trace = tmp_path / "f.sst"
    generate("fib", trace, n=8)
    with pytest.raises(
        PluginError, match=rf"^scheduler 'test-clash': record_fields\(\) gives '{key}', a field"
    ):
        simsched.run(trace, "itrs-scaling-4", "test-clash")
    ok = type("Fine", (cls,), {"name": "test-fine", "record_fields": lambda self: {"mine": [1]}})
    SCHEDULERS.register(ok)
    assert simsched.run(trace, "itrs-scaling-4", "test-fine").record["mine"] == "[1]"


@pytest.mark.parametrize("key", ["name", "arrival", "scheduler", "trace"])
def test_a_plugins_record_field_cannot_replace_a_job_entrys_own(key, monkeypatch):
    # In a job set's record {"name": ...} renamed the job, {"arrival": ...} moved it.
    from simsched.errors import PluginError
    from simsched.schedulers.registry import SCHEDULERS
    from simsched.schedulers.ws import WorkStealing

    cls = type(
        "Clash",
        (WorkStealing,),
        {"name": "test-clash", "aliases": (), "record_fields": lambda self: {key: 5}},
    )
    monkeypatch.setattr(SCHEDULERS, "entries", dict(SCHEDULERS.entries))
    SCHEDULERS.register(cls)
    spec = {
        "jobs": [{"name": "j", "generator": "fib", "params": {"n": 8}, "scheduler": "test-clash"}]
    }
    with pytest.raises(
        PluginError, match=rf"^scheduler of job 'j': record_fields\(\) gives '{key}'"
    ):
        simsched.run_jobs(spec, "itrs-scaling-4")


def test_a_disk_full_at_the_record_leaves_a_failure_record(ms_trace, tmp_path, monkeypatch):
    """A disk that filled up at result.json left config.json and timeline.npz without a
    record (readers refuse such a folder): the timeline makes room for the failure's."""
    import errno

    from simsched import api
    from simsched.errors import OutputError

    real, calls = api._write_record, []

    def full_twice(out, rec):
        calls.append(rec["status"])
        if len(calls) <= 2:
            raise OutputError(f"{out}/result.json: cannot write (no space left)", errno.ENOSPC)
        real(out, rec)

    monkeypatch.setattr(api, "_write_record", full_twice)
    out = tmp_path / "o"
    with pytest.raises(OutputError, match="no space left"):
        simsched.run(ms_trace, "itrs-scaling-2", "ws", out_dir=out, speedup=False)
    assert calls == ["ok", "error", "error"]
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "result.json"]
    rec = json.loads((out / "result.json").read_text())
    assert rec["status"] == "error" and "no space left" in rec["error"]
