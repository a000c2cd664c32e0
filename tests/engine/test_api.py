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


def test_speedup_baseline_is_cached(ms_trace, tmp_path):
    from simsched.api import baseline_path
    from simsched.machine import load_machine

    r1 = simsched.run(ms_trace, "itrs-scaling-4", "pdf")
    path = baseline_path(r1.record["trace_digest"], load_machine("itrs-scaling-4"))
    base = json.loads(path.read_text())["makespan_cycles"]
    assert r1.record["baseline_makespan_cycles"] == base
    # The 1-core PDF run of the same machine equals the baseline (no scheduling costs there).
    r = simsched.run(
        ms_trace, "itrs-scaling-4", "pdf", overrides={"cores_per_socket": 1, "costs.queue_op": 0}
    )
    assert r.record["makespan_cycles"] == base


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
