"""Run folders damaged by hand: every file is checked where it is read, errors name it."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import simsched
from simsched.errors import ConfigError
from simsched.plotting.allotment import load_jobs_record
from simsched.plotting.iterations import load_records
from simsched.plotting.runfolder import read_record, run_files, run_trace_paths
from simsched.plotting.timeline import load_timeline
from simsched.workloads import generate
from tests.blocking import raised_within
from tests.engine.machines import TWO_BY_TWO


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rf")
    generate("fib", root / "fib.sst", n=12)
    simsched.run(root / "fib.sst", TWO_BY_TWO, "ws", out_dir=root / "run", speedup=False)
    (root / "jobs.yaml").write_text(
        "controller: equi\njobs:\n"
        "  - {name: a, trace: fib.sst, scheduler: ws}\n"
        "  - {name: b, trace: fib.sst, scheduler: ws}\n"
    )
    simsched.run_jobs(root / "jobs.yaml", TWO_BY_TWO, out_dir=root / "jobs")
    return root


def _copy(runs, tmp_path, which="run"):
    return shutil.copytree(runs / which, tmp_path / which)


def _edit_npz(folder, **changes):
    with np.load(folder / "timeline.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(folder / "timeline.npz", **arrays)


def _edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _unknown_compression(folder):
    data = bytearray((folder / "timeline.npz").read_bytes())
    data[data.index(b"PK\x01\x02") + 10] = 99  # the central directory's compression method
    (folder / "timeline.npz").write_bytes(bytes(data))


def _core(folder):
    with np.load(folder / "timeline.npz") as z:
        return z["core"].copy()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "timeline.npz").write_bytes(b""), "timeline.npz: cannot read .*empty"),
        (
            lambda d: (d / "timeline.npz").write_bytes((d / "timeline.npz").read_bytes()[:300]),
            "timeline.npz: cannot read the timeline",
        ),
        (lambda d: (d / "timeline.npz").write_bytes(b"junk"), "not an .npz archive"),
        (_unknown_compression, "timeline.npz: cannot read the timeline .*compression method"),
        (lambda d: _edit_npz(d, core=_core(d) + 1000), "'core' names core 1\\d\\d\\d of 4"),
        (lambda d: _edit_npz(d, core=_core(d).reshape(1, -1)), "'core' has shape"),
        (lambda d: _edit_npz(d, start=np.zeros(3, np.int64)), "'start' has 3 entries"),
        (lambda d: _edit_npz(d, end=_core(d).astype(float)), "'end' holds float64"),
        (lambda d: _edit_npz(d, core=np.array(["a"] * len(_core(d)))), "'core' holds <U1"),
        (lambda d: _edit_npz(d, makespan=np.zeros(0, np.int64)), "'makespan' is empty"),
        (
            lambda d: _edit_npz(d, **{k: np.zeros(0, np.int64) for k in ("core", "start", "end")}),
            "entries|is empty",
        ),
        (lambda d: (d / "result.json").write_text("[]"), "result.json: not a result record"),
        (
            lambda d: (d / "result.json").write_text("[" * 100_000 + "]" * 100_000),
            "result.json: .*nested too deeply",
        ),
        (
            lambda d: _edit_json(d / "result.json", machine_config="zz"),
            "result.json: field 'machine_config' is not JSON",
        ),
    ],
)
def test_damaged_single_run_is_a_config_error_naming_the_file(runs, tmp_path, damage, message):
    d = _copy(runs, tmp_path)
    damage(d)
    with pytest.raises(ConfigError, match=message) as info:
        load_timeline(d)
    assert str(info.value).startswith(str(d))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"allotment": "zz"}, "field 'allotment' is not an allotment series"),
        ({"allotment": {"cycles": [0, 1, 2], "cores": [[1]]}}, "field 'allotment'"),
        ({"jobs": "x"}, "field 'jobs' is not a list of jobs"),
    ],
)
def test_damaged_job_set_record(runs, tmp_path, change, message):
    d = _copy(runs, tmp_path, "jobs")
    _edit_json(d / "result.json", **change)
    for load in (load_jobs_record, load_timeline):
        with pytest.raises(ConfigError, match=f"^{d / 'result.json'}: {message}"):
            load(d)


_LOADERS = {
    "timeline": load_timeline,
    "allotment": load_jobs_record,
    "iterations": lambda path: load_records([path]),
}


@pytest.mark.parametrize("load", _LOADERS.values(), ids=_LOADERS.keys())
def test_what_is_no_run_record_is_named_for_what_it_is(runs, tmp_path, load):
    """A config.json or a record of {} read as a run that "failed (?)", a missing path
    as a folder without a result.json, and "" as the current folder's result.json."""
    d = _copy(runs, tmp_path)
    with pytest.raises(ConfigError) as info:
        load(d / "config.json")
    assert str(info.value) == (
        f"{d / 'config.json'}: not a run's result record (no 'status' field; the run's "
        f"record is {d / 'result.json'})"
    )
    (d / "result.json").write_text("{}")
    for path in (d, d / "result.json"):
        with pytest.raises(ConfigError) as info:
            load(path)
        assert str(info.value) == (
            f"{d / 'result.json'}: not a run's result record (no 'status' field; "
            "`simsched run --out` writes one)"
        )
    with pytest.raises(ConfigError) as info:
        load(tmp_path / "nonexist")
    assert str(info.value).startswith(f"{tmp_path / 'nonexist'}: no such run folder")
    with pytest.raises(ConfigError) as info:
        load("")
    assert str(info.value) == (
        "an empty path, expected a run folder (`simsched run --out`) or its result.json"
    )


@pytest.mark.parametrize(
    ("which", "load"),
    [("run", load_timeline), ("jobs", load_timeline), ("jobs", load_jobs_record)],
)
@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"status": "error", "error": "trace t.sst: truncated\nline 2"},
            "failed (trace t.sst: truncated)",
        ),
        ({"status": "error", "error": ""}, "failed (its record gives no error message)"),
        ({"status": "error"}, "failed (its record gives no error message)"),
        ({"status": "done"}, "field 'status' is 'done', not 'ok', 'error' or 'interrupted'"),
    ],
)
def test_a_failed_run_gives_its_own_error(runs, tmp_path, which, load, change, says):
    """Before: "the run failed (?)" for a record without a message, and a message of several
    lines took as many lines of the error."""
    d = _copy(runs, tmp_path, which)
    record = json.loads((d / "result.json").read_text())
    record.pop("error", None)
    (d / "result.json").write_text(json.dumps({**record, **change}))
    with pytest.raises(ConfigError) as info:
        load(d)
    assert str(info.value).startswith(f"{d / 'result.json'}: ")
    assert str(info.value).endswith(says)


def test_job_numbers_beyond_the_job_set(runs, tmp_path):
    d = _copy(runs, tmp_path, "jobs")
    with np.load(d / "timeline.npz") as z:
        job = z["job"] + 5
    _edit_npz(d, job=job)
    with pytest.raises(ConfigError, match="'job' names job 6 of 2"):
        load_timeline(d)


def test_iteration_records_must_be_objects(runs, tmp_path):
    d = _copy(runs, tmp_path)
    (d / "result.json").write_text("null")
    with pytest.raises(ConfigError, match="not a result record"):
        load_records([d])


def test_config_naming_a_trace_by_a_number(runs, tmp_path):
    d = _copy(runs, tmp_path)
    assert run_trace_paths(d) == [runs / "fib.sst"]
    _edit_json(d / "config.json", trace=5)
    with pytest.raises(ConfigError, match="config.json: field 'trace' is not a path"):
        run_trace_paths(d)
    (d / "config.json").write_text("{x")  # unreadable: the trace is unknown, as when missing
    assert run_trace_paths(d) == [None]


def test_a_named_pipe_in_the_configs_place_is_an_unknown_trace(runs, tmp_path):
    """config.json and point.json were read with read_text: a named pipe there blocked
    `plot timeline` and `export timeline` for ever."""
    d = _copy(runs, tmp_path)
    (d / "config.json").unlink()
    os.mkfifo(d / "config.json")
    os.mkfifo(d / "point.json")
    out: list[object] = []
    assert raised_within(lambda: out.append(run_trace_paths(d)), "run_trace_paths") == []
    assert out == [[None]]


def test_a_named_pipe_in_the_timelines_place_is_refused(runs, tmp_path):
    """np.load of a named pipe in timeline.npz's place blocked `plot timeline` and `export
    timeline` for ever."""
    from simsched.plotting.runfolder import TIMELINE_FILE, read_timeline

    d = _copy(runs, tmp_path)
    (d / TIMELINE_FILE).unlink()
    os.mkfifo(d / TIMELINE_FILE)
    [exc] = raised_within(lambda: read_timeline(d / TIMELINE_FILE), "read_timeline")
    assert isinstance(exc, ConfigError)
    assert str(exc).endswith("timeline.npz: is a named pipe, expected a timeline archive (.npz)")


def test_a_named_pipe_given_as_the_record_is_named_as_one(tmp_path):
    """A named pipe or a device without .json in its name was said to hold no JSON text,
    though it was never read."""
    os.mkfifo(tmp_path / "run")
    for path, kind in ((tmp_path / "run", "a named pipe"), (Path("/dev/null"), "a device")):
        with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: is {kind}, expected"):
            read_record(path)


def _job(index, **changes):
    def edit(record):
        record["jobs"][index].update(changes)

    return edit


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cores": "4"}, "field 'cores' is not an integer from 1, but '4'"),
        ({"cores": -3}, "field 'cores' is not an integer from 1, but -3"),
        ({"cores": 2.5}, "field 'cores' is not an integer from 1, but 2.5"),
        ({"cores": 10**400}, "field 'cores' is not an integer from 1, but 1000"),
        ({"sockets": 0}, "field 'sockets' is not an integer from 1, but 0"),
        ({"makespan_cycles": None}, "field 'makespan_cycles' is not an integer from 0, but None"),
        ({"makespan_cycles": -1}, "field 'makespan_cycles' is not an integer from 0, but -1"),
        (_job(1, finish="x"), "field 'finish' of job 'b' is not an integer from 0, but 'x'"),
        (_job(0, finish=-5), "field 'finish' of job 'a' is not an integer from 0, but -5"),
        (_job(0, finish=2.5), "field 'finish' of job 'a' is not an integer from 0, but 2.5"),
        ({"allotment": {"cycles": [0, 1]}}, "field 'allotment' is not an allotment series"),
        (
            lambda r: r["allotment"].update(cycles=["0", "9"]),
            "field 'allotment' is not an allotment series",
        ),
        (
            lambda r: r["allotment"].update(cycles=[float("nan"), 9]),
            "field 'allotment' is not an allotment series",
        ),
        (
            lambda r: r["allotment"]["desire"][0].__setitem__(0, -2),
            "field 'allotment' is not an allotment series",
        ),
    ],
)
def test_damaged_fields_the_allotment_figure_reads(runs, tmp_path, capsys, change, message):
    """Used to be drawn as they stood ('4', -3 or 2.5 cores), or to end in a TypeError,
    OverflowError, ValueError or KeyError inside the allotment figure."""
    from simsched.cli import main

    d = _copy(runs, tmp_path, "jobs")
    record = json.loads((d / "result.json").read_text())
    if callable(change):
        change(record)
    else:
        record.update(change)
    (d / "result.json").write_text(json.dumps(record))
    with pytest.raises(ConfigError, match=f"^{d / 'result.json'}: {message}"):
        load_jobs_record(d)
    with pytest.raises(SystemExit) as info:
        main(["plot", "allotment", str(d), "-o", str(tmp_path / "a.png")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("which", ["run", "jobs"])
@pytest.mark.parametrize(
    ("sockets", "message"),
    [
        ([0, 0, 2, 1], "'socket_of_core' names socket 2 of 2 sockets"),
        ([0, 0, 1, 1, 1], "'socket_of_core' has 5 entries, not one per core \\(4\\)"),
        ([0, 0, 1], "'socket_of_core' has 3 entries, not one per core \\(4\\)"),
    ],
)
def test_sockets_of_cores_beyond_the_machine(runs, tmp_path, which, sockets, message):
    """Used to be drawn and exported as if the machine had those sockets and cores."""
    from simsched.export import chrome_trace

    d = _copy(runs, tmp_path, which)
    _edit_npz(d, socket_of_core=np.array(sockets, np.int64))
    for load in (load_timeline, chrome_trace):
        with pytest.raises(ConfigError, match=f"^{d / 'timeline.npz'}: array {message}"):
            load(d)


def test_run_files_of_a_result_json_name_the_files_beside_it(tmp_path):
    (tmp_path / "r").mkdir()
    by_folder = run_files(tmp_path / "r")
    by_record = run_files(tmp_path / "r" / "result.json")
    assert by_folder == by_record
    assert sorted(p.name for p in by_record.values()) == [
        "config.json",
        "result.json",
        "timeline.npz",
    ]


def test_a_sampled_runs_timeline_is_drawn_and_exported_without_what_it_skipped(tmp_path, capsys):
    """A sampled run's timeline marks the strands it did not replay to their end with end
    -1 (core and start -1 too when they never started): `plot timeline` and `export
    timeline` refused the whole file ("array 'core' has a negative entry")."""
    from simsched.cli import main
    from simsched.plotting.runfolder import TIMELINE_FILE, not_replayed, read_timeline

    generate("heat", tmp_path / "h.sst", nx=66, ny=18, iters=12, cutoff=8)
    run = tmp_path / "run"
    simsched.run(
        tmp_path / "h.sst", TWO_BY_TWO, "ws", sample_iterations=2, sample_precision=None,
        out_dir=run,
    )  # fmt: skip
    arrays = read_timeline(run / TIMELINE_FILE)
    skipped = not_replayed(arrays)
    assert 0 < skipped.sum() < len(skipped)
    assert (arrays["core"][~skipped] >= 0).all()
    with pytest.raises(SystemExit) as info:
        main(["plot", "timeline", str(run), "-o", str(tmp_path / "t.png")])
    assert info.value.code == 0 and (tmp_path / "t.png").stat().st_size > 0
    with pytest.raises(SystemExit) as info:
        main(["export", "timeline", str(run), "-o", str(tmp_path / "t.json")])
    assert info.value.code == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == (~skipped).sum() and doc["otherData"]["not_replayed"] == skipped.sum()
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in slices)
    # -1 marks only what was not replayed: elsewhere, and below -1, it is damage
    for name, edit in (("core", {"core": -1}), ("start", {"start": -2, "end": -1})):
        bad = dict(arrays)
        first = int(np.flatnonzero(~skipped)[0])
        for k, v in edit.items():
            bad[k] = bad[k].copy()
            bad[k][first] = v
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(ConfigError, match=f"array '{name}' has a negative entry"):
            read_timeline(tmp_path / "bad.npz")
    # the record decides: only a sampled run may have strands it did not replay
    record = json.loads((run / "result.json").read_text())
    assert record["sampled"] is True
    read_timeline(run / TIMELINE_FILE, record)
    with pytest.raises(ConfigError, match="array 'end' has a negative entry, but the run was not"):
        read_timeline(run / TIMELINE_FILE, {**record, "sampled": False})
    # a strand not replayed either never started (core and start -1) or was running
    started = dict(arrays)
    never = int(np.flatnonzero(skipped & (arrays["core"] == -1))[0])
    started["core"] = started["core"].copy()
    started["core"][never] = 0
    np.savez(tmp_path / "bad.npz", **started)
    with pytest.raises(ConfigError, match="array 'core' and 'start' disagree"):
        read_timeline(tmp_path / "bad.npz", record)
    # the scripts that count per strand refuse it: the extrapolated iterations are missing
    from simsched.experiments.scripts import load_run

    with pytest.raises(SystemExit) as info:
        load_run(run, record["trace_digest"], tmp_path / "h.sst", "leaf_sharing.py")
    assert info.value.code == 2 and "a sampled run (--sample-iterations)" in capsys.readouterr().err
    # step_affinity.py compares only the iterations replayed in detail, and takes it (the
    # paper-size commands of docs/experiments.md sample; the refusal had broken them)
    rec, timeline = load_run(
        run, record["trace_digest"], tmp_path / "h.sst", "step_affinity.py", sampled_ok=True
    )
    assert rec["sampled"] is True and (timeline["end"] == -1).sum() == skipped.sum()
