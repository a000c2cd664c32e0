"""Job sets as a sweep workload: every point replays the whole set under the point's job
scheduler; the rows carry the multi-job record (nested fields as JSON text in Parquet)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from simsched.engine.record import nest_fields
from simsched.errors import ConfigError
from simsched.experiments import load_results, load_spec, run_sweep
from simsched.experiments.spec import check_spec

SAMPLES = Path(__file__).resolve().parents[2] / "traces" / "samples"


def _write(tmp_path: Path, controller: str = "equi") -> Path:
    (tmp_path / "two.yaml").write_text(
        textwrap.dedent(
            f"""
            seed: 0
            jobs:
              - trace: {SAMPLES / "fib-16-6.valgrind.sst"}
                copies: 2
                arrival: [0, 40000]
            """
        )
    )
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        textwrap.dedent(
            f"""
            name: jobs
            out: results
            workloads:
              - {{name: two, jobs: two.yaml, controller: {controller}}}
            machines: [itrs-scaling-4]
            schedulers: [ws, pdf]
            seeds: [0]
            """
        )
    )
    return spec


def test_job_set_points_run_and_store_the_multi_job_record(tmp_path):
    loaded = load_spec(_write(tmp_path))
    run_sweep(loaded, progress=False)
    df = load_results(loaded.out_dir)
    assert sorted(df["scheduler"]) == ["pdf", "ws"]
    assert set(df["status"]) == {"ok"}
    for _, row in df.iterrows():
        rec = nest_fields(row.to_dict())
        assert rec["kind"] == "jobs" and rec["n_jobs"] == 2
        assert [j["scheduler"] for j in rec["jobs"]] == [row["scheduler"]] * 2
        assert rec["jobs"][1]["arrival"] == 40000
        assert rec["controller"] == "equi"
    result = json.loads(next(Path(loaded.out_dir).rglob("result.json")).read_text())
    assert isinstance(result["jobs"], list)


def test_job_set_checked_before_the_first_point(tmp_path):
    with pytest.raises(ConfigError, match="unknown controller 'nope'"):
        check_spec(load_spec(_write(tmp_path, controller="nope")))


@pytest.mark.parametrize(
    ("quantum", "message"),
    [
        (5, "workloads.0: quantum: quantum 5 cycles is below the floor"),
        (2**63, "less than"),
        ('"50000"', "workloads.0.quantum: Input should be a valid integer"),
    ],
)
def test_job_set_quantum_checked_before_the_first_point(tmp_path, quantum, message):
    """A workload's quantum outside the controllers' range made every point fail; a quoted
    one ("50000") was taken as a number, which the job set's own quantum is not."""
    spec = _write(tmp_path)
    spec.write_text(spec.read_text().replace("controller: equi}", f"quantum: {quantum}}}"))
    with pytest.raises(ConfigError, match=message):
        check_spec(load_spec(spec))


@pytest.mark.parametrize(
    ("job_set", "message"),
    [
        ("quantum: 5\n", "quantum 5 cycles is below the floor"),
        ("controller_params: {nope: 1}\n", "controller 'equi': unknown parameter(s) nope"),
        ("controller: deq\n", "controller 'deq' needs a quantum"),
        ("controller: static\ncontroller_params: {shares: [0, 4]}\n", "give job(s) 0 no core"),
        ("controller: static\ncontroller_params: {shares: [4, 4]}\n", "4 in all at most"),
    ],
)
def test_job_set_controller_checked_on_each_machine_before_the_first_point(
    tmp_path, job_set, message
):
    """The job set's own controller settings were checked only by name, so every point
    of the set failed alike once it ran."""
    spec = _write(tmp_path)
    spec.write_text(spec.read_text().replace(", controller: equi}", "}"))
    jobs = tmp_path / "two.yaml"
    jobs.write_text(jobs.read_text() + job_set)
    where = f"workload two on machine itrs-scaling-4: {jobs}: "
    with pytest.raises(ConfigError, match=re.escape(where) + ".*" + re.escape(message)):
        check_spec(load_spec(spec))


def test_trace_cache_that_is_a_file_refused_for_job_sets(tmp_path):
    """A job set may generate its jobs' traces in the cache, so a file there is refused for
    any job-set workload (this one's jobs come from a trace file)."""
    spec = _write(tmp_path)
    spec.write_text(spec.read_text() + "trace_cache: two.yaml\n")
    with pytest.raises(ConfigError, match="two.yaml: exists and is not a folder"):
        check_spec(load_spec(spec))


def test_a_job_set_point_names_the_plugin_generators_of_its_groups(tmp_path, monkeypatch):
    """run_jobs knows the traces, not the generators that made them: a job-set point of a
    plug-in generator recorded no plugin_identity, so an edit of it left its rows current.
    Here fib stands for a plug-in (its module given an outside identity)."""
    import simsched.plugins

    monkeypatch.setattr(
        simsched.plugins,
        "outside_source_identity",
        lambda module: "0123456789abcdef" if module.endswith(".fib") else None,
    )
    (tmp_path / "gen.yaml").write_text(
        "seed: 0\njobs:\n  - {generator: fib, params: {n: 12}, copies: 2, arrival: [0, 0]}\n"
    )
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        "name: jobs\nout: results\nworkloads:\n  - {name: gen, jobs: gen.yaml}\n"
        "machines: [itrs-scaling-4]\nschedulers: [ws]\nseeds: [0]\n"
    )
    loaded = load_spec(spec)
    run_sweep(loaded, workers=0, progress=False)
    row = load_results(loaded.out_dir).iloc[0]
    assert json.loads(row["plugin_identity"]) == {"workload:fib": "0123456789abcdef"}
    # and so does the run's own record (it did not)
    (written,) = loaded.out_dir.glob("**/result.json")
    rec = json.loads(written.read_text())
    assert rec["status"] == "ok" and rec["makespan_cycles"] == row["makespan_cycles"]
    named = rec["plugin_identity"]
    assert (json.loads(named) if isinstance(named, str) else named) == {
        "workload:fib": "0123456789abcdef"
    }

    # a sweep point of such a generator too
    spec.write_text(
        "name: gen\nout: gen-results\nworkloads:\n"
        "  - {name: fib, generator: fib, params: {n: 12}}\n"
        "machines: [itrs-scaling-4]\nschedulers: [ws]\nseeds: [0]\n"
    )
    loaded = load_spec(spec)
    run_sweep(loaded, workers=0, progress=False)
    row = load_results(loaded.out_dir).iloc[0]
    (written,) = loaded.out_dir.glob("**/result.json")
    named = json.loads(written.read_text())["plugin_identity"]
    assert (json.loads(named) if isinstance(named, str) else named) == json.loads(
        row["plugin_identity"]
    )
