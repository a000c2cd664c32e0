"""Job-set files: what load_jobset and check_jobset refuse, and how they say it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from simsched.errors import ConfigError
from simsched.jobset import check_jobset, load_jobset


def test_a_trace_that_is_a_folder_is_said_to_be_one(tmp_path):
    # It was said not to exist.
    spec = {"jobs": [{"trace": str(tmp_path)}]}
    for check in (load_jobset, check_jobset):
        with pytest.raises(
            ConfigError, match=r"^job set: jobs\.0\.trace: .* is a folder, expected"
        ):
            check(spec)
    spec = {"jobs": [{"trace": str(tmp_path / "none.sst")}]}
    with pytest.raises(ConfigError, match=r"^job set: jobs\.0\.trace: .*none\.sst does not exist"):
        load_jobset(spec)


def test_a_trace_that_is_a_named_pipe_or_a_device_is_said_to_be_one(tmp_path):
    # Both were said not to exist.
    fifo = tmp_path / "fifo.sst"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a named pipe"), (Path(os.devnull), "a device")):
        spec = {"jobs": [{"trace": str(path)}]}
        for check in (load_jobset, check_jobset):
            with pytest.raises(
                ConfigError, match=rf"^job set: jobs\.0\.trace: .* is {kind}, expected a trace"
            ):
                check(spec)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_mean_or_quantum_that_is_no_finite_number_is_said_to_be_one(value):
    # nan was refused as "Input should be less than or equal to 1152921504606847000".
    group = {"trace": "x.sst", "copies": 2, "arrival": {"poisson": {"mean": value}}}
    with pytest.raises(ConfigError, match=r"poisson\.mean: Input should be a finite number"):
        load_jobset({"jobs": [group]})
    with pytest.raises(ConfigError, match=r"quantum_ms: Input should be a finite number"):
        load_jobset({"quantum_ms": value, "jobs": [{"trace": "x.sst"}]})


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        # Two groups named alike: the record's jobs, the tables and the allotment figure
        # showed two 'heat' jobs that could not be told apart.
        (
            [{"name": "heat", "generator": "fib"}, {"name": "heat", "generator": "fib"}],
            r"^job set: jobs\.1: job name 'heat' is also a job of jobs\.0; give one",
        ),
        # A group's copies against another group's label.
        (
            [{"name": "fib#1", "generator": "fib"}, {"generator": "fib", "copies": 2}],
            r"^job set: jobs\.1: job name 'fib#1' \(from its generator\) is also a job of jobs\.0",
        ),
        (
            [{"trace": "a/heat.sst"}, {"trace": "b/heat.sst"}],
            r"jobs\.1: job name 'heat' \(from its trace file's name\) is also",
        ),
    ],
)
def test_two_jobs_of_one_name_are_refused(groups, message):
    for check in (load_jobset, check_jobset):
        with pytest.raises(ConfigError, match=message):
            check({"jobs": groups})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        # "" was replaced by the default label without a word
        ("", r"jobs\.0\.name: empty; a job needs a name"),
        # a NUL or a newline reached the record's tables and the figures' titles
        ("a\nb", r"jobs\.0\.name: 'a\\nb': a name is one line of text"),
        ("j\x00", r"jobs\.0\.name: 'j\\x00': a name is one line of text"),
    ],
)
def test_a_job_name_is_one_line_of_text(name, message):
    for check in (load_jobset, check_jobset):
        with pytest.raises(ConfigError, match=message):
            check({"jobs": [{"name": name, "generator": "fib"}]})


def test_a_job_set_built_in_python_refuses_a_name_of_two_lines(tmp_path):
    from simsched.jobset import JobEntry, JobSet, check_built_jobset

    js = load_jobset({"jobs": [{"generator": "fib", "copies": 2}]})
    bad = JobSet(jobs=[JobEntry(**{**vars(js.jobs[0]), "name": "a\nb"})])
    with pytest.raises(ConfigError, match=r"^JobSet\.jobs\[0\]: name 'a\\nb': a name is one"):
        check_built_jobset(bad)


def test_distinct_names_stay_as_they_were():
    js = load_jobset(
        {"jobs": [{"generator": "fib", "copies": 2}, {"name": "f", "generator": "fib"}]}
    )
    assert [j.name for j in js.jobs] == ["fib#0", "fib#1", "f"]


def test_a_sweep_spec_given_as_a_dict_is_named_without_a_command_for_a_file():
    # a dict has no path to give `sweep run`: the advice read "simsched sweep run job set"
    spec = {"name": "s", "workloads": ["fib"], "machines": ["itrs-scaling-1"], "schedulers": ["ws"]}
    for check in (load_jobset, check_jobset):
        with pytest.raises(ConfigError) as info:
            check(spec)
        assert str(info.value) == (
            "job set: a sweep spec (top-level workloads:, docs/sweeps.md), not a job set"
        )


@pytest.mark.parametrize(
    ("group", "message"),
    [
        # "" was the job set's own folder: ": is a folder, expected a trace file"
        ({"trace": ""}, "job set: jobs.0.trace: must not be empty"),
        ({"generator": ""}, "job set: jobs.0.generator: must not be empty"),
        # the key the branch does not know, not the one it then misses
        (
            {"trace": "x.sst", "arrival": {"gauss": {"mean": 5}}},
            "job set: jobs.0.arrival.gauss: unknown key",
        ),
        # a parameter's value of no scalar type: "Input should be a valid integer"
        (
            {"trace": "x.sst", "scheduler_params": {"bl": [1]}},
            "job set: jobs.0.scheduler_params.bl: expected a number, text or true/false, got [1]",
        ),
        (
            {"trace": "x.sst", "scheduler_params": {"bl": None}},
            "job set: jobs.0.scheduler_params.bl: expected a number, text or true/false, got None",
        ),
    ],
)
def test_a_group_says_what_is_wrong_with_it(group, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        check_jobset({"jobs": [group]})


def test_a_job_set_file_must_be_a_regular_file(tmp_path):
    """/dev/zero was read until memory ran out, and a named pipe blocked."""
    import os
    import threading
    import time

    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)

    def unblock() -> None:  # a reader that opened the pipe gets end-of-file, not a hang
        time.sleep(5)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader: nothing blocked

    threading.Thread(target=unblock, daemon=True).start()
    for path, what in ((fifo, "a named pipe"), ("/dev/zero", "a device")):
        with pytest.raises(ConfigError, match=re.escape(f"{path}: is {what}, expected a job-set")):
            check_jobset(path)
    with pytest.raises(ConfigError, match="no such job-set file"):
        load_jobset(tmp_path / "none.yaml")


def test_a_job_set_made_in_python_is_checked_as_a_file_would_be(tmp_path):
    """Two jobs of one name ran and were recorded as ['heat', 'heat']; a params of None
    failed with a TypeError after the whole replay."""
    from pathlib import Path

    import simsched
    from simsched.jobset import JobEntry, JobSet

    def js(*jobs):
        return JobSet(jobs=list(jobs), seed=0, controller="equi", controller_params={},
                      quantum=100_000, source=None)  # fmt: skip

    def job(name="a", params=None, arrival=0):
        return JobEntry(name, Path("x.sst"), "ws", {} if params is None else params, arrival, 0)

    for built, message in (
        (js(job(), job()), "JobSet.jobs[1]: job name 'a' is also an earlier job's"),
        (js(job(name="")), "JobSet.jobs[0]: name '' is not a job's name"),
        (js(job(params=[1])), "JobSet.jobs[0] (a): params [1] is not a dict"),
        (js(), "JobSet.jobs=[]: expected a non-empty list of JobEntry"),
        (js({"name": "a"}), "JobSet.jobs[0]: {'name': 'a'} is not a JobEntry"),
    ):
        with pytest.raises(ConfigError, match="^" + re.escape(message)):
            simsched.run_jobs(built, "itrs-scaling-2", out_dir=tmp_path / "o")


def test_a_lock_file_of_the_trace_cache_that_cannot_be_opened_names_the_cache(
    tmp_path, monkeypatch
):
    """A generated job's trace is made under a lock file in the cache: a folder (or an
    unwritable file) in its place was a bare IsADirectoryError (PermissionError)."""
    from simsched.errors import OutputError

    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path / "cache"))
    spec = {"jobs": [{"generator": "fib", "params": {"n": 5}}]}
    load_jobset(spec)
    traces = tmp_path / "cache" / "traces"
    for f in traces.iterdir():
        f.unlink()
        if f.suffix == ".lock":
            f.mkdir()
    with pytest.raises(
        OutputError,
        match=r"\.lock: cannot use it \(is a folder\); it is in "
        "simsched's cache folder: set SIMSCHED_CACHE_DIR",
    ):
        load_jobset(spec)
