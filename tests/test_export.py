"""simsched.export: a run's timeline as Chrome trace-event JSON (Perfetto)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import simsched
from simsched.errors import ConfigError, command_line
from simsched.export import COUNTER_BUCKETS, _rates, chrome_trace, export_timeline
from simsched.workloads import generate
from tests.engine.machines import TWO_BY_TWO

PHASES = {"X", "M", "C", "s", "f"}


@pytest.fixture(scope="module")
def ms_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    generate("mergesort", d / "ms.sst", n=4096, grain=128)
    simsched.run(d / "ms.sst", TWO_BY_TWO, "ws", seed=3, out_dir=d / "run", speedup=False)
    return d


def check_trace_event_format(doc: dict) -> None:
    """The trace-event JSON object format: what Perfetto's JSON importer reads."""
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] in ("ms", "ns")
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str) and isinstance(e["pid"], int)
        if e["ph"] == "M":
            assert e["name"] in {
                "process_name",
                "process_sort_index",
                "thread_name",
                "thread_sort_index",
            }
            continue
        assert isinstance(e["ts"], float | int) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["tid"], int) and e["dur"] >= 0
        if e["ph"] == "C":
            assert all(isinstance(v, float | int) for v in e["args"].values())
        if e["ph"] in "sf":
            assert isinstance(e["id"], int) and isinstance(e["tid"], int)


def test_export_parses_and_slices_sum_to_busy_cycles(ms_run, tmp_path):
    out = tmp_path / "run.json"
    export_timeline(ms_run / "run", out, "perfetto")
    doc = json.loads(out.read_text())
    check_trace_event_format(doc)
    rec = json.loads((ms_run / "run" / "result.json").read_text())
    ev = doc["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    assert len(slices) == rec["strands"]
    # per core: durations (cycles and µs) sum to the core's busy cycles
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    per_core: dict[int, int] = {}
    per_core_us: dict[int, float] = {}
    for e in slices:
        c = int(names[(e["pid"], e["tid"])].split()[1])
        per_core[c] = per_core.get(c, 0) + e["args"]["cycles"]
        per_core_us[c] = per_core_us.get(c, 0.0) + e["dur"]
    assert sum(per_core.values()) == rec["busy_cycles"]
    socket_busy = [0] * rec["sockets"]
    for c, v in per_core.items():
        socket_busy[c // 2] += v  # TWO_BY_TWO: cores 0-1 on socket 0, 2-3 on socket 1
        assert per_core_us[c] == pytest.approx(v / 1e3)  # no clock_ghz: 1 GHz
    assert socket_busy == rec["busy_by_socket"]
    # the per-strand counters add up to the record's totals
    for key, field in (
        ("private_misses", "private_misses"),
        ("llc_misses", "L2_misses"),
        ("dram_local", "dram_local"),
        ("dram_remote", "dram_remote"),
    ):
        assert sum(e["args"][key] for e in slices) == rec[field], key
    # processes are sockets, threads cores; steals are flows with both ends
    procs = {e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert procs == {"socket 0", "socket 1"}
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    assert starts and starts == {e["id"] for e in ev if e["ph"] == "f"}
    assert doc["otherData"]["flows"] == len(starts) and rec["steals"] > 0
    assert {e["name"] for e in ev if e["ph"] == "C"} == {
        "L2 misses",
        "local DRAM lines",
        "remote DRAM lines",
    }
    counted = sum(e["args"]["per bucket"] for e in ev if e["name"] == "L2 misses")
    assert counted == pytest.approx(rec["L2_misses"], abs=COUNTER_BUCKETS * 5e-4)  # rounding


def test_rates_spread_counts_over_buckets():
    start, end = np.array([0, 10]), np.array([10, 30])
    counts = np.array([10.0, 40.0])
    got = _rates(start, end, counts, np.array([0.0, 5.0, 20.0, 40.0]))
    assert got == pytest.approx([5.0, 5.0 + 20.0, 20.0])
    # a zero-length strand keeps its counts (in its one cycle)
    assert _rates(np.array([7]), np.array([7]), np.array([3.0]), np.array([0.0, 10.0])) == [3.0]


def test_job_set_groups_tracks_by_job_with_allotment(tmp_path):
    generate("fib", tmp_path / "fib.sst", n=14)
    js = tmp_path / "jobs.yaml"
    js.write_text(
        "controller: equi\njobs:\n"
        "  - {name: a, trace: fib.sst, scheduler: ws}\n"
        "  - {name: b, trace: fib.sst, scheduler: ws, arrival: 2000}\n"
    )
    res = simsched.run_jobs(js, TWO_BY_TWO, out_dir=tmp_path / "run")
    doc = chrome_trace(tmp_path / "run")
    check_trace_event_format(doc)
    ev = doc["traceEvents"]
    procs = {e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert {"job a · socket 0", "job b · socket 0", "allotment"} <= procs
    slices = [e for e in ev if e["ph"] == "X"]
    assert sum(e["args"]["cycles"] for e in slices) == res.record["useful_cycles"]
    last = max(e["pid"] for e in ev)  # the allotment's track
    assert {e["name"] for e in ev if e["ph"] == "C" and e["pid"] == last} >= {
        "cores of a",
        "cores of b",
    }


def test_bad_inputs_are_one_line(ms_run, tmp_path):
    with pytest.raises(ConfigError, match="^fmt='svg': use perfetto or chrome$"):
        export_timeline(ms_run / "run", tmp_path / "x.json", "svg")
    with command_line(), pytest.raises(ConfigError, match="^--format 'svg': use perfetto"):
        export_timeline(ms_run / "run", tmp_path / "x.json", "svg")
    with pytest.raises(ConfigError, match="no result.json"):
        chrome_trace(tmp_path)
    old = tmp_path / "old"
    old.mkdir()
    (old / "result.json").write_text((ms_run / "run" / "result.json").read_text())
    with np.load(ms_run / "run" / "timeline.npz") as z:
        np.savez(
            old / "timeline.npz",
            **{k: z[k] for k in ("core", "start", "end", "frame", "socket_of_core")},
        )
    with pytest.raises(ConfigError, match="older simsched"):
        chrome_trace(old)


def test_cli_export_timeline(ms_run, tmp_path, capsys):
    from simsched.cli import main

    out = tmp_path / "t.json"
    with pytest.raises(SystemExit) as info:
        main(["export", "timeline", str(ms_run / "run"), "--format", "chrome", "-o", str(out)])
    assert info.value.code in (0, None)
    assert "steal/migration flows" in capsys.readouterr().out
    check_trace_event_format(json.loads(out.read_text()))
    with pytest.raises(SystemExit) as info:
        main(["export", "timeline", str(tmp_path / "nope"), "-o", str(out)])
    assert info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_damaged_run_folder_is_a_config_error(ms_run, tmp_path):
    """Used to end in IndexError, JSONDecodeError or TypeError inside the export."""
    import shutil

    d = shutil.copytree(ms_run / "run", tmp_path / "run")
    with np.load(d / "timeline.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(d / "timeline.npz", **{**arrays, "core": arrays["core"] + 1000})
    with pytest.raises(ConfigError, match=f"^{d / 'timeline.npz'}: array 'core' names core"):
        chrome_trace(d)
    np.savez(d / "timeline.npz", **{**arrays, "frame": arrays["frame"] + 10**9})
    with pytest.raises(ConfigError, match="array 'frame' names frame 10000"):
        chrome_trace(d)
    np.savez(d / "timeline.npz", **arrays)
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "trace": 5}))
    with pytest.raises(ConfigError, match="config.json: field 'trace' is not a path"):
        chrome_trace(d)
    rec = json.loads((d / "result.json").read_text())
    (d / "result.json").write_text(json.dumps({**rec, "machine_config": "zz"}))
    with pytest.raises(ConfigError, match="result.json: field 'machine_config' is not JSON"):
        chrome_trace(d)


def test_paths_must_be_paths(ms_run, tmp_path):
    with pytest.raises(ConfigError, match=r"result=None: expected a path"):
        chrome_trace(None)
    with pytest.raises(ConfigError, match=r"trace=3: expected a path"):
        chrome_trace(ms_run / "run", trace=3)
    with pytest.raises(ConfigError, match=r"out=None: expected a path"):
        export_timeline(ms_run / "run", None)


def test_a_wrong_trace_is_named_as_the_argument(ms_run, tmp_path):
    """chrome_trace told a Python caller of --trace, the command line's option."""
    other = tmp_path / "fib.sst"
    generate("fib", other, n=8)
    with pytest.raises(ConfigError) as info:
        chrome_trace(ms_run / "run", other)
    assert str(info.value) == f"trace={str(other)!r}: not the run's trace (digest differs)"
    with command_line(), pytest.raises(ConfigError, match=r"^--trace \S+fib\.sst: not the run's"):
        chrome_trace(ms_run / "run", other)
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"jobs:\n  - {{trace: {other}, scheduler: ws, copies: 2}}\n")
    simsched.run_jobs(jobs, TWO_BY_TWO, out_dir=tmp_path / "jobs")
    with pytest.raises(ConfigError) as info:
        chrome_trace(tmp_path / "jobs", other)
    assert str(info.value) == (
        f"trace={str(other)!r}: applies to single runs; a job set's config names its traces"
    )


def test_an_output_that_is_not_json_is_refused(ms_run, tmp_path, capsys):
    """`export timeline RUN -o x.csv` wrote trace-event JSON into x.csv (status 0)."""
    from simsched.cli import main

    out = tmp_path / "x.csv"
    with pytest.raises(ConfigError) as info:
        export_timeline(ms_run / "run", out)
    assert str(info.value) == f"out={str(out)!r}: the timeline is trace-event JSON; name it .json"
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "timeline", str(ms_run / "run"), "-o", str(out)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"simsched: error: --out {out}: the timeline is trace-event JSON; name it .json\n"
    )
    assert not out.exists()
    for name in ("t.JSON", "t"):  # what was taken stays taken
        export_timeline(ms_run / "run", tmp_path / name)
        assert json.loads((tmp_path / name).read_text())["traceEvents"]


def test_the_timeline_given_for_the_run_names_what_to_give(ms_run, tmp_path, capsys):
    """Before: "timeline.npz: not a JSON file (byte 14 is not UTF-8 text)"."""
    from simsched.cli import main

    npz = ms_run / "run" / "timeline.npz"
    said = (
        f"{npz}: not a run's result record (not JSON text); give the run folder "
        "(`simsched run --out`) or its result.json"
    )
    with pytest.raises(ConfigError) as info:
        chrome_trace(npz)
    assert str(info.value) == said
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "timeline", str(npz), "-o", str(tmp_path / "t.json")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"simsched: error: {said}\n"
