"""The issue's "cases found": each is one line on stderr, exit status 2, nothing half-written."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import pytest

from simsched.profile.coarsen import TABLE_COLUMNS
from simsched.workloads import generate
from tests.cli.conftest import ROOT, run_process


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("simsched: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def junk(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_bytes(bytes(range(256)) * 4)
    return p


@pytest.fixture
def png(tmp_path):
    p = tmp_path / "pic.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(128, 256)))
    return p


def test_binary_files_given_as_yaml_or_table(cli, junk, png, fib_trace, tmp_path):
    for args in (
        ["machine", "show", junk],
        ["run", "-t", fib_trace, "-m", junk],
        ["machine", "show", png],
        ["sweep", "run", png],
        ["regrain", fib_trace, "--table", png, "-o", tmp_path / "c.sst"],
    ):
        code, _, err = cli(*args)
        assert code == 2
        assert "is not UTF-8 text" in one_line(err)
    assert not (tmp_path / "c.sst").exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("caches.L2.size=1180591620717411303424", "caches.1.size (L2): Input should be less than"),
        ("memory.latency=1e30", "memory.latency: Input should be a valid integer"),
        ("memory.latency=100000000000", "memory.latency: Input should be less than"),
        ("cores_per_socket=true", "cores_per_socket: Input should be a valid integer"),
        ("sockets=64", "sockets"),
    ],
)
def test_machine_values_are_bounded_in_the_schema(cli, fib_trace, setting, message):
    if setting == "sockets=64":  # 64 sockets of 4 cores is a valid machine: accepted
        code, out, _ = cli("machine", "show", "itrs-scaling-4", "--set", setting)
        assert code == 0 and "sockets: 64" in out
        return
    for args in (["machine", "show", "itrs-45nm-2"], ["run", "-t", fib_trace, "-m", "itrs-45nm-2"]):
        code, _, err = cli(*args, "--set", setting)
        assert code == 2 and message in one_line(err)


def test_a_number_beyond_a_floats_range_is_echoed_as_written(cli, fib_trace, tmp_path):
    # 1e999 read as inf, and the field that refused it echoed "inf"
    for args, given in (
        (["machine", "show", "itrs-45nm-2", "--set", "clock_ghz=1e999"], "--set 'clock_ghz=1e999'"),
        (["run", "-t", fib_trace, "-m", "itrs-45nm-2", "--set", "clock_ghz=-1E400"], "-1E400"),
        (["trace", "gen", "heat", "-p", "nx=1e999", "-o", tmp_path / "h.sst"], "'nx=1e999'"),
    ):
        code, _, err = cli(*args)
        line = one_line(err)
        assert code == 2 and given in line and "would read as infinity" in line, line
    assert not (tmp_path / "h.sst").exists()
    jobs = ROOT / "experiments" / "saws" / "jobsets" / "fig8-heat-10.yaml"
    machine = tmp_path / "m.yaml"
    machine.write_text("name: m\nbase: itrs-45nm-2\nclock_ghz: 1.0e-400\n")
    for args, says in (
        # YAML values: a flow mapping on the command line, a sweep's --set, a machine file
        (
            ["machine", "show", "itrs-45nm-2", "--set", "memory={latency: 1.0e+999}"],
            "'1.0e+999' as a number: out of a number's range",
        ),
        (
            ["sweep", "status", ROOT / "experiments" / "cab" / "small.yaml", "--set",
             "workloads.0.params.nx=1.0e+999"],
            "'1.0e+999' as a number: out of a number's range",
        ),
        (["machine", "show", machine], "line 3, column 12: cannot read '1.0e-400' as a number"),
        # options that are numbers
        (["run", "-t", fib_trace, "-m", "itrs-45nm-2", "--sample-iterations", "2",
          "--sample-precision", "1e999"], "1e999 is out of a number's range"),
        (["run", "-j", jobs, "-m", "opteron-8380-4x4", "--quantum-ms", "1e-999"],
         "1e-999 is too small for a number (it would read as 0)"),
        (["trace", "gen", "heat", "-p", "nx=1e-999", "-o", tmp_path / "h.sst"],
         "1e-999 is too small for a number"),
    ):  # fmt: skip
        code, _, err = cli(*args)
        assert code == 2 and says in one_line(err), err
    # YAML 1.1 reads 1e-999 (no dot) as text, which a float parameter read as 0.0
    slow = tmp_path / "j.yaml"
    slow.write_text(
        (ROOT / "experiments/saws/fig4.yaml").read_text().replace("rho: 2.0", "rho: 1e-999")
    )
    code, _, err = cli("run", "--jobs", slow, "-m", "sunfire-x4600-8x4")
    assert code == 2 and "rho: '1e-999' is too small for a number" in one_line(err)
    # a --jobs run's --set that is no machine field is named as written
    code, _, err = cli("run", "-j", jobs, "-m", "opteron-8380-4x4", "--set", "bl=0x3")
    assert code == 2 and one_line(err).startswith("simsched: error: --set bl=0x3: not a machine")
    # inf written as such is the field's to refuse, in the user's words
    code, _, err = cli("machine", "show", "itrs-45nm-2", "--set", "clock_ghz=inf")
    assert code == 2 and "finite" in one_line(err)


def test_a_machine_field_set_to_a_list_is_read_as_yaml(cli, tmp_path):
    # `--set caches=[]` said "caches: expected a list, got '[]'": the value stayed text
    code, _, err = cli("machine", "show", "itrs-scaling-2", "--set", "caches=[]")
    assert code == 2 and "expected a list" not in err and "caches" in one_line(err)
    # text that is no YAML stays text, for the field to take or name
    code, _, err = cli("machine", "show", "itrs-scaling-2", "--set", "caches=[{name: L1")
    assert code == 2 and "caches: expected a list, got '[{name: L1'" in one_line(err)
    code, out, _ = cli("machine", "show", "itrs-scaling-2", "--set", "description=[draft] 2")
    assert code == 0 and "[draft] 2" in out


def test_a_bandwidth_in_exponent_form_yaml_reads_as_text_gets_a_hint(cli, tmp_path):
    # YAML 1.1 reads 1.0e300 (no sign in the exponent) as text: the message said only
    # "not a number of GB/s"
    m = tmp_path / "m.yaml"
    code, out, _ = cli("machine", "show", "opteron-8380-4x4")
    m.write_text(out.replace("bandwidth: 4.0", "bandwidth: 8.8e0", 1))
    code, _, err = cli("machine", "show", m)
    assert code == 2 and "'8.8e0' is not a number of GB/s" in one_line(err)
    assert "signed exponent: 1.0e+9" in one_line(err)


@pytest.mark.parametrize("bandwidth", ["1.0e-300", "1.0e-15"])
def test_link_bandwidth_too_low_for_the_engine(cli, fib_trace, tmp_path, bandwidth):
    # 1e-300 overflowed int64 in the memory model, 1e-15 reported a deadlock instead
    m = tmp_path / "m.yaml"
    code, out, _ = cli("machine", "show", "opteron-8380-4x4")
    assert code == 0
    m.write_text(out.replace("bandwidth: 4.0", f"bandwidth: {bandwidth}", 1))
    for args in (["run", "-t", fib_trace, "-m", m], ["memsim", "-t", fib_trace, "-m", m]):
        code, _, err = cli(*args)
        line = one_line(err)
        assert code == 2 and f"links.0.bandwidth: {float(bandwidth)} GB/s is too low" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "--seed -1: must be between 0 and"),
        (["--window", "99999999999999999999"], "--window 99999999999999999999: must be between"),
        # the API names a value by its keyword; the command line by the option typed
        (["--sample-iterations=1"], "error: --sample-iterations 1: must be between 2"),
        (["-p", "spawn_policy=parent-first", "-p", "spawn_policy=child-first"], "given twice"),
        # --set's value won over -p's without a word
        (
            ["-p", "spawn_policy=parent-first", "--set", "spawn_policy=child-first"],
            "--set spawn_policy: also given as --param spawn_policy",
        ),
        # was ignored (a sweep spec refuses it)
        (["--sample-precision", "1"], "--sample-precision applies with --sample-iterations"),
    ],
)
def test_run_arguments(cli, fib_trace, args, message):
    code, _, err = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", *args)
    assert code == 2 and message in one_line(err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # -s pdf ran every job under its file's scheduler, ws, without a word
        (["-s", "pdf"], "--scheduler applies to --trace runs (a job set's file names each"),
        (["--iterations", "auto"], "--iterations applies to --trace runs"),
        (["--sample-iterations", "3"], "--sample-iterations applies to --trace runs"),
    ],
)
def test_trace_options_with_a_job_set(cli, tmp_path, args, message):
    jobs = tmp_path / "j.yaml"
    jobs.write_text("jobs:\n  - {generator: fib, params: {n: 8}}\n")
    code, _, err = cli("run", "--jobs", jobs, "-m", "itrs-scaling-2", *args)
    assert code == 2 and message in one_line(err)


def test_compare_sample_precision_alone(cli, fib_trace):
    code, _, err = cli(
        "compare", "-t", fib_trace, "-m", "itrs-scaling-2", "-s", "ws", "--sample-precision", "1"
    )
    assert code == 2 and "--sample-precision applies with" in one_line(err)


@pytest.mark.parametrize(
    ("schedulers", "message"),
    [
        ("ws,", "--schedulers 'ws,': an empty name"),
        # said "schedulers 'ws,ws'", the Python argument's words
        ("ws,ws", "--schedulers 'ws,ws': ws is given twice"),
        ("ws,cilk", "ws and cilk both mean ws"),
        # read "ws and another alias both mean ws"
        ("ws,WS", "ws and WS both mean ws"),
        ("pdf,cilk,ws,WS", "cilk, ws and WS all mean ws"),
    ],
)
def test_compare_scheduler_list(cli, fib_trace, schedulers, message):
    code, _, err = cli("compare", "-t", fib_trace, "-m", "itrs-scaling-2", "-s", schedulers)
    assert code == 2 and message in one_line(err)


def test_compare_seeds_and_an_empty_list_are_worded_for_their_caller(cli, fib_trace):
    code, _, err = cli(
        "compare", "-t", fib_trace, "-m", "itrs-scaling-2", "-s", "ws", "--seeds", "0"
    )
    assert code == 2 and "--seeds=0: must be between 1 and" in one_line(err)
    assert "compare: seeds" not in err
    import simsched
    from simsched.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^schedulers=\[\]: no scheduler named"):
        simsched.compare(fib_trace, "itrs-scaling-2", [])  # was "an empty name (a stray comma?)"
    with pytest.raises(ConfigError, match=r"^compare: seeds=0: must be between 1 and"):
        simsched.compare(fib_trace, "itrs-scaling-2", ["ws"], seeds=0)


def test_run_with_missing_trace_or_file_as_output_folder(cli, fib_trace, tmp_path):
    code, _, err = cli("run", "-t", tmp_path / "missing.sst", "-m", "itrs-scaling-2")
    assert code == 2 and "missing.sst: no such trace file" in one_line(err)
    existing = tmp_path / "existing"
    existing.write_text("keep me")
    code, _, err = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-o", existing)
    assert code == 2 and "exists and is not a folder" in one_line(err)
    assert existing.read_text() == "keep me"
    if os.path.isdir("/proc/self"):  # /proc refuses new folders, as root too
        code, _, err = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-o", "/proc/new")
        line = one_line(err)
        assert code == 2 and "cannot create the folder" in line and "exists" not in line


@pytest.mark.parametrize("where", ["under-a-file", "dangling-link"])
def test_compare_output_folder_is_checked_before_any_run(
    cli, fib_trace, tmp_path, monkeypatch, where
):
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    out = tmp_path / ("file/cmp" if where == "under-a-file" else "link")
    ran = []
    monkeypatch.setattr("simsched.api.compare", lambda *a, **k: ran.append(1))
    code, _, err = cli(
        "compare", "-t", fib_trace, "-m", "itrs-scaling-2", "-s", "ws,pdf", "-o", out
    )
    line = one_line(err)
    assert code == 2 and line.startswith(f"simsched: error: --out {out}: ")
    assert ("is a file, not a folder" if where == "under-a-file" else "does not exist") in line
    assert not ran  # refused before simulating, not after
    assert (tmp_path / "file").read_text() == "keep me" and not (tmp_path / "nowhere").exists()


def test_sweep_output_that_is_a_file(cli, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkloads: [{generator: fib, params: {n: 8}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [ws]\n"
    )
    existing = tmp_path / "taken"
    existing.write_text("keep me")
    code, _, err = cli("sweep", "run", spec, "--workers", "0", "--set", f"out={existing}")
    assert code == 2 and "is a file, not a folder" in one_line(err)
    assert existing.read_text() == "keep me"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-t", "TRACE", "-m", "itrs-scaling-2", "--json"],
        ["trace", "info", "TRACE"],
        ["machine", "list"],
    ],
)
def test_full_standard_output_is_one_line(fib_trace, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    args = [fib_trace if a == "TRACE" else a for a in args]
    with open("/dev/full", "w") as full:
        res = run_process(*args, stdout=full)
    assert res.returncode == 2
    assert "standard output: no space left on the device" in one_line(res.stderr)


def test_an_os_error_without_a_file_is_not_blamed_on_a_working_standard_output(cli, monkeypatch):
    """An OSError that names no file was always put down to standard output, also when
    it came from elsewhere (a write to a file already open) and standard output worked."""
    import errno

    import simsched.cli._presets as presets

    def broken() -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(presets, "print_presets", broken)
    code, _, err = cli("machine", "list")
    assert code == 2 and err == "simsched: error: Input/output error\n"


def test_standard_output_is_blamed_only_when_it_fails(tmp_path, monkeypatch):
    import errno

    from simsched.cli import _stdout_fails

    with open(tmp_path / "out.txt", "w") as works:
        monkeypatch.setattr(sys, "stdout", works)
        assert not _stdout_fails(OSError(errno.EIO, "x"))
        # a file growing (a full device, a quota, a size limit) may be standard output
        for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            assert _stdout_fails(OSError(code, "x"))
    # ... but not when standard output is a pipe: it cannot raise them
    r, w = os.pipe()
    with os.fdopen(r) as reader, os.fdopen(w, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        assert not _stdout_fails(OSError(errno.ENOSPC, "x")) and reader.readable()
    monkeypatch.setattr(sys, "stdout", None)
    assert _stdout_fails(OSError(errno.EIO, "x"))
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            monkeypatch.setattr(sys, "stdout", full)
            assert _stdout_fails(OSError(errno.ENOSPC, "x"))


def test_outputs_onto_devices_and_symlinks(cli, tmp_path):
    code, _, _ = cli("trace", "gen", "fib", "-p", "n=8", "-o", "/dev/null")
    assert code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if os.path.exists("/dev/full"):
        code, _, err = cli("trace", "gen", "fib", "-p", "n=8", "-o", "/dev/full")
        assert code == 2 and "/dev/full: cannot write (no space left" in one_line(err)
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    real = tmp_path / "real.sst"
    real.write_text("old")
    link = tmp_path / "link.sst"
    link.symlink_to(real)
    code, _, _ = cli("trace", "gen", "fib", "-p", "n=8", "-o", link)
    assert code == 0 and link.is_symlink() and real.stat().st_size > 100
    old = os.umask(0o002)
    try:
        code, _, _ = cli("trace", "gen", "fib", "-p", "n=8", "-o", tmp_path / "shared.sst")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "shared.sst").stat().st_mode) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sst", "real.sst", "shared.sst"]


def test_trace_gen_without_workload_or_output(cli, tmp_path):
    code, _, err = cli("trace", "gen", "-o", tmp_path / "x.sst")
    assert code == 2 and "no workload given" in one_line(err)
    code, _, err = cli("trace", "gen", "fib")
    assert code == 2 and "no output given" in one_line(err)
    code, out, _ = cli("trace", "gen", "--list")
    assert code == 0 and "fib" in out
    assert "chunk_refs = 1048576  (int in [4096, 1048576])" in out  # every workload's
    # Each workload's line says what the program is; the papers' keys survive as text.
    assert (
        "heat  iterative 5-point heat stencil on a 2-D grid, rows split in two ([CAB11] §II)" in out
    )
    assert list(tmp_path.iterdir()) == []


def test_trace_gen_list_with_a_name_lists_that_workload(cli):
    """`trace gen heat --list` shows heat's parameters (and chunk_refs), not every
    generator's; an unknown name is the usual one-line error."""
    code, out, _ = cli("trace", "gen", "heat", "--list")
    assert code == 0 and out.startswith("heat  iterative 5-point heat stencil")
    assert "mergesort" not in out and "  nx = 1024" in out and "chunk_refs = " in out
    code, _, err = cli("trace", "gen", "hest", "--list")
    assert code == 2 and "unknown workload 'hest'" in one_line(err)


def test_trace_gen_list_says_it_makes_no_trace(cli, tmp_path):
    """`trace gen heat --list -o x.sst` listed and left no x.sst, without a word."""
    out = tmp_path / "x.sst"
    for extra, named in (
        (("-o", str(out)), "drop -o,"),
        (("-p", "nx=66"), "drop -p,"),
        (("-o", str(out), "-p", "nx=66"), "drop -o and -p,"),
    ):
        code, _, err = cli("trace", "gen", "heat", "--list", *extra)
        assert code == 2 and f"trace gen --list makes no trace: {named} or drop --list" in one_line(
            err
        )
    assert not out.exists()


def test_profile_and_coarsen_options(cli, fib_trace, tmp_path):
    code, _, err = cli("profile", fib_trace, "--line", "0")
    assert code == 2 and "--line 0: a line size is a power of two" in one_line(err)
    code, _, err = cli("trace", "info", fib_trace, "--line", "3")
    assert code == 2 and "--line 3" in one_line(err)
    code, _, err = cli("profile", fib_trace, "--plot", tmp_path / "p.xyz")
    line = one_line(err)
    assert code == 2 and "unsupported figure format 'xyz'" in line and "png" in line
    prof = tmp_path / "p.npz"
    code, _, _ = cli("profile", fib_trace, "-o", prof)
    assert code == 0
    code, _, err = cli("coarsen", prof, "--machine", "itrs-scaling-2", "-K", "inf")
    assert code == 2 and "-K inf" in one_line(err)
    # echoed as written: -1 and 0 read "-1.0" and "0.0"
    for text in ("-1", "0", "1e9"):
        code, _, err = cli("coarsen", prof, "--machine", "itrs-scaling-2", "-K", text)
        assert code == 2 and f"error: -K {text}: the factor is a finite" in one_line(err)
    code, _, err = cli("coarsen", prof, "--machine", "itrs-scaling-2", "-K", "abc")
    assert code == 2 and "'abc' is not a number" in err
    code, _, err = cli("coarsen", fib_trace, "--machine", "itrs-scaling-2")
    line = one_line(err)
    assert code == 2 and "not a simsched profile" in line and "pickle" not in line


def test_coarsen_a_profile_with_a_damaged_group_tree(cli, fib_trace, tmp_path):
    import numpy as np

    prof = tmp_path / "p.prof"
    code, _, _ = cli("profile", fib_trace, "-o", prof)
    assert code == 0
    with np.load(prof) as z:
        arrays = {k: z[k].copy() for k in z.files}
    arrays["group_parent"][3] = 1_000_000  # used to crash the process (out-of-bounds write)
    with open(prof, "wb") as f:
        np.savez(f, **arrays)
    # a separate process: a crash shows as a signal there instead of killing the tests
    r = run_process("coarsen", prof, "--machine", "itrs-scaling-4")
    assert r.returncode == 2
    assert one_line(r.stderr).endswith(
        f"{prof}: corrupt group tree (a parent does not precede its child)"
    )


def test_plot_timeline_level_and_sweep_y(cli, tmp_path):
    from simsched.experiments.store import save_row

    row = {
        "point_id": "a",
        "status": "ok",
        "machine": "m1",
        "cores": 2,
        "speedup": 1.5,
        "scheduler": "ws",
        "seed": 0,
    }
    save_row(tmp_path / "sw", "a", row)
    code, _, err = cli(
        "plot", "sweep", tmp_path / "sw", "--x", "cores", "--y", "machine", "-o", tmp_path / "f.png"
    )
    assert code == 2 and "--y machine: not a numeric column" in one_line(err)
    assert not (tmp_path / "f.png").exists()
    # a filter that keeps nothing was reported as "no successful runs to plot"
    code, _, err = cli(
        "plot", "sweep", tmp_path / "sw", "--x", "cores", "--y", "speedup",
        "--where", "scheduler=wss", "-o", tmp_path / "f.png",
    )  # fmt: skip
    assert code == 2
    assert one_line(err).endswith(
        "sw: no row matches --where 'scheduler=wss' (of 1 row); no row has scheduler 'wss' "
        "(did you mean ws?)"
    )
    assert not (tmp_path / "f.png").exists()


def test_a_where_that_matches_nothing_is_told_only_with_an_output(cli, tmp_path):
    """plot sweep and results export printed the --where's warning before an error of
    another option (two lines of one refusal); plot sweep asked for the figure's format
    only once it had drawn it."""
    from simsched.experiments.store import save_row

    row = {"point_id": "a", "status": "ok", "cores": 2, "speedup": 1.5, "scheduler": "ws"}
    save_row(tmp_path / "sw", "a", row)
    where = ["--where", "scheduler=wss|ws"]
    for args in (
        ["plot", "sweep", "--x", "nosuch", "--y", "speedup", "-o", tmp_path / "f.png"],
        ["plot", "sweep", "--x", "cores", "--y", "speedup", "-o", tmp_path / "f.txt"],
        ["results", "export", "-o", tmp_path / "afile" / "r.csv"],
    ):
        (tmp_path / "afile").touch()
        code, _, err = cli(*args[:2], tmp_path / "sw", *where, *args[2:])
        assert code == 2 and "no row has" not in one_line(err)
    code, _, err = cli("results", "export", tmp_path / "sw", *where, "-o", tmp_path / "r.csv")
    assert code == 0 and err.startswith("warning: --where 'scheduler=wss|ws': no row has")


def test_sweep_workers_and_dask_address(cli, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkloads: [{generator: fib, params: {n: 8}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [ws]\n"
    )
    code, _, err = cli("sweep", "run", spec, "--workers", "-1")
    assert code == 2
    code, _, err = cli("sweep", "run", spec, "--executor", "dask", "--address", "notanaddress")
    assert code == 2 and "expected tcp://HOST:PORT" in one_line(err)
    assert not (tmp_path / "results").exists()


def test_result_json_written_atomically_is_valid(cli, fib_trace, tmp_path):
    code, _, _ = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-o", tmp_path / "r")
    assert code == 0
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "ok" and rec["simsched_version"]
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.startswith(".")]


def test_capture_outputs_go_through_temporaries(cli, tmp_path):
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    from tests.cli.conftest import ROOT

    prog = tmp_path / "fib"
    code, _, _ = cli("cc", "-O2", ROOT / "traces" / "programs" / "fib.c", "-o", prog)
    assert code == 0
    real = tmp_path / "real.sst"
    real.write_text("old")
    (tmp_path / "link.sst").symlink_to(real)
    code, _, _ = cli(
        "capture", "-o", tmp_path / "link.sst", "--raw", tmp_path / "r.zst", "--", prog, "8", "3"
    )
    assert code == 0 and real.stat().st_size > 100 and (tmp_path / "r.zst").stat().st_size > 0
    if os.path.exists("/dev/full"):
        code, _, err = cli(
            "capture", "-o", tmp_path / "c.sst", "--raw", "/dev/full", "--", prog, "8", "3"
        )
        assert code == 2 and "/dev/full: cannot write" in one_line(err)
        assert not (tmp_path / "c.sst").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("what", ["run-out", "trace-file"])
def test_dangling_symlink_output_creates_no_folders(cli, fib_trace, tmp_path, what):
    """A dangling symlink as the output used to create folders at its target."""
    link = tmp_path / ("dl" if what == "run-out" else "t.sst")
    link.symlink_to(tmp_path / "target" / "a" / ("b" if what == "run-out" else "t.sst"))
    if what == "run-out":
        args = ["run", "-t", fib_trace, "-m", "itrs-45nm-2", "--out", link]
    else:
        args = ["trace", "gen", "fib", "--param", "n=8", "-o", link]
    code, _, err = cli(*args)
    assert code == 2
    assert "is a symbolic link to " in one_line(err) and "does not exist" in err
    assert not (tmp_path / "target").exists()


def test_sigterm_unwinds_like_ctrl_c(tmp_path):
    """A batch system's SIGTERM (a job's time limit) used to end the process on the spot,
    leaving the output's temporary file behind; now it unwinds: one line, status 143, no
    temporary left.  ``trace gen`` of a large mergesort (276 M references, seconds) has
    its temporary output made from its start."""
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "trace",
            "gen",
            "mergesort",
            "-p",
            "n=4194304",
            "-o",
            str(out / "x.sst"),
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not any(out.iterdir()) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert (stdout, stderr) == ("", "simsched: error: terminated (SIGTERM)\n")
    assert sorted(out.iterdir()) == []


def test_sigterm_writes_the_runs_record(tmp_path, fib_trace, monkeypatch):
    """A run stopped by SIGTERM records it as such (its record said Ctrl-C)."""
    import simsched
    from simsched.engine.replay import Replay
    from simsched.errors import Terminated

    def stop(self: object) -> None:
        raise Terminated

    monkeypatch.setattr(Replay, "run", stop)
    with pytest.raises(Terminated):
        simsched.run(fib_trace, "itrs-scaling-2", "ws", out_dir=tmp_path / "r")
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert (rec["status"], rec["error"]) == ("interrupted", "terminated (SIGTERM)")


def _kernel_interrupted(*args: object, **kwargs: object) -> None:
    """What Ctrl-C inside a compiled Numba function's call back into Python looks like to
    its caller (``trace import`` met it once in about five tries)."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError(
            "CPUDispatcher(<function expand_records>) returned a result with an exception set"
        ) from exc


def test_an_interrupt_inside_a_compiled_kernel_is_an_interrupt(
    tmp_path, fib_trace, monkeypatch, capsys
):
    """It ended in a 60-line SystemError traceback and status 1, and a run's record said
    error, with a traceback."""
    import simsched
    import simsched.cli as cli
    from simsched.engine.replay import Replay

    monkeypatch.setattr(cli, "build_app", lambda command: _kernel_interrupted)
    with pytest.raises(SystemExit) as info:
        cli.main(["trace", "import", "raw.zst", "-o", "t.sst"])
    assert info.value.code == 130
    assert capsys.readouterr().err == "simsched: error: interrupted (Ctrl-C)\n"
    monkeypatch.setattr(Replay, "run", _kernel_interrupted)
    with pytest.raises(KeyboardInterrupt):
        simsched.run(fib_trace, "itrs-scaling-2", "ws", out_dir=tmp_path / "r")
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert (rec["status"], rec["error"]) == ("interrupted", "interrupted (Ctrl-C)")
    assert "traceback" not in rec

    def other(*args: object, **kwargs: object) -> None:
        raise SystemError("a bug")  # not an interrupt: stays an internal error

    monkeypatch.setattr(cli, "build_app", lambda command: other)
    with pytest.raises(SystemError, match="a bug"):
        cli.main(["trace", "import", "raw.zst", "-o", "t.sst"])


def test_damaged_run_folder_and_results_store(cli, fib_trace, tmp_path):
    """An empty timeline.npz used to print 'simsched: error: aborted' (numpy's EOFError is
    click's Abort); a damaged row.json was dropped without a word or ended in a traceback."""
    from simsched.experiments.store import save_row

    run = tmp_path / "run"
    assert cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-s", "ws", "-o", run)[0] == 0
    (run / "timeline.npz").write_bytes(b"")
    for cmd, out in ((["plot", "timeline"], "x.png"), (["export", "timeline"], "x.json")):
        code, _, err = cli(*cmd, run, "-o", tmp_path / out)
        assert code == 2
        assert one_line(err).endswith(
            f"{run / 'timeline.npz'}: cannot read the timeline (empty file)"
        )

    sweep = tmp_path / "sw"
    save_row(sweep, "a", {"point_id": "a", "status": "ok", "seed": 1, "makespan_cycles": 5})
    (sweep / "points" / "b").mkdir()
    (sweep / "points" / "b" / "row.json").write_text("[1, 2]")
    code, out, err = cli("results", "show", sweep)
    assert code == 0 and "\n1 row\n" in out
    assert err.strip() == (
        f"warning: {sweep / 'points' / 'b' / 'row.json'}: not a JSON object (list); "
        "the point is left out"
    )
    (sweep / "results.parquet").write_bytes(b"")
    code, _, err = cli("results", "export", sweep / "results.parquet", "-o", tmp_path / "r.csv")
    assert code == 2 and "results.parquet: not a readable Parquet table" in one_line(err)


def test_an_output_that_is_an_input_is_refused_before_anything_is_written(cli, tmp_path):
    trace = tmp_path / "t.sst"
    generate("fib", trace, n=10)
    (tmp_path / "link.sst").symlink_to(trace)
    raw = tmp_path / "r.raw"
    raw.write_bytes(b"not a stream")
    table = tmp_path / "g.csv"
    # a table regrain can read: it reads the table before its --out is checked
    table.write_text(",".join(TABLE_COLUMNS) + "\n")
    results = tmp_path / "res.csv"
    results.write_text("a\n1\n")
    before = trace.read_bytes()
    for args, what in (
        (["profile", trace, "-o", trace], "--out .*t.sst: is the trace this command reads"),
        (["profile", trace, "-o", tmp_path / "link.sst"], "is the trace"),
        (["profile", trace, "--plot", tmp_path / ".." / tmp_path.name / "t.sst"], "--plot"),
        (["coarsen", table, "--machine", "itrs-scaling-8", "-o", table], "is the profile"),
        (["regrain", trace, "--table", table, "-o", trace], "is the trace"),
        (["regrain", trace, "--table", table, "-o", table], "is the table"),
        (["trace", "import", raw, "-o", raw], "is the raw stream"),
        (["results", "export", results, "-o", results], "is the results"),
        (["capture", "-o", tmp_path / "c.sst", "--raw", tmp_path / "c.sst", "--", "true"], "--raw"),
    ):
        code, _, err = cli(*args)
        assert code == 2, args
        line = one_line(err)
        assert re.search(what, line) and "would replace it" in line, (args, line)
    assert trace.read_bytes() == before
    assert raw.read_bytes() == b"not a stream"
    assert table.read_text() == ",".join(TABLE_COLUMNS) + "\n"
    assert results.read_text() == "a\n1\n" and not (tmp_path / "c.sst").exists()


def test_an_output_in_a_run_folder_may_not_replace_what_the_command_reads(cli, tmp_path):
    from simsched.api import run

    trace = tmp_path / "t.sst"
    generate("fib", trace, n=8)
    run(trace, "itrs-scaling-2", "ws", out_dir=tmp_path / "r")
    saved = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()}
    r_json = tmp_path / "r" / "result.json"
    (tmp_path / "link.sst").symlink_to(trace)
    before = trace.read_bytes()
    for args, what in (
        (["export", "timeline", tmp_path / "r", "-o", tmp_path / "r" / "result.json"], "record"),
        (["plot", "timeline", tmp_path / "r", "-o", tmp_path / "r" / "timeline.npz"], "timeline"),
        (["plot", "iterations", tmp_path / "r", "-o", tmp_path / "r" / "config.json"], "config"),
        # given as its result.json, the run's timeline and config beside it are read too
        (["export", "timeline", r_json, "-o", tmp_path / "r" / "timeline.npz"], "timeline"),
        (["plot", "timeline", r_json, "-o", tmp_path / "r" / "config.json"], "config"),
        # without --trace, the trace the run's config names is read
        (["export", "timeline", tmp_path / "r", "-o", trace], "trace"),
        (["export", "timeline", r_json, "-o", tmp_path / "link.sst"], "trace"),
    ):
        code, _, err = cli(*args)
        assert code == 2, args
        assert f"'s {what} this command reads" in one_line(err), err
    assert saved == {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()}
    assert trace.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--machin", "x"], "run: No such option: --machin (did you mean --machine?)"),
        # click compared names with their dashes: every long option was "close" to another
        (["run", "--nosuchopt"], "run: No such option: --nosuchopt; see `simsched run --help`"),
        (["run", "--hlep"], "run: No such option: --hlep (did you mean --help?)"),
        (["run", "-t", "x.sst", "-m", "m", "--seed", "abc"], "run: Invalid value for '--seed'"),
        (["sweep", "run"], "sweep run: Missing argument 'spec'; see `simsched sweep run --help`"),
        (["profile", "x.sst", "--sizes"], "profile: Option '--sizes' requires an argument"),
        (["nosuch"], "No such command 'nosuch'; see `simsched --help`"),
    ],
)
def test_usage_errors_are_one_line(cli, args, message):
    """click drew a box of five or more lines for these, headed by a usage line that named
    the interpreter's argv[0] when simsched ran through Python."""
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert message in one_line(err), err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # -o "" wrote the run's files into the current folder, -s "" ran ws, and a path
        # "" was "." ("trace info: .: is a directory")
        (["run", "-t", "x.sst", "-m", "m", "-o", ""], "run: an empty argument after -o"),
        (["run", "-t", "x.sst", "-m", "m", "-s", ""], "run: an empty argument after -s"),
        (["trace", "info", ""], "trace info: an empty argument (an unset shell variable?)"),
        (["machine", "show", ""], "machine show: an empty argument (an unset"),
        (["compare", "-t", "x.sst", "--out=", "-m", "m"], "compare: --out: an empty value"),
        (["capture", "-o", "c.sst", "--", ""], "capture: an empty program name after --"),
    ],
)
def test_an_empty_argument_is_refused_before_the_command_runs(
    cli, tmp_path, monkeypatch, args, message
):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert message in one_line(err), err
    assert list(tmp_path.iterdir()) == []


def test_an_empty_argument_of_the_captured_program_or_the_compiler_is_theirs():
    from simsched.cli import empty_argument

    assert empty_argument(["capture", "-o", "c.sst", "--", "./prog", ""]) is None
    assert empty_argument(["cc", "-o", "p", "p.c", "-DNAME="]) is None
    assert empty_argument(["cc", "", "p.c"]) is None
    # values that may be empty: a program's argument to restore, a figure without a title
    assert empty_argument(["trace", "import", "r.zst", "-o", "t.sst", "--arg", ""]) is None
    assert empty_argument(["trace", "import", "r.zst", "-o", "t.sst", "--arg="]) is None
    assert empty_argument(["plot", "iterations", "r", "-o", "f.png", "--title", ""]) is None
    assert empty_argument(["sweep", "run", "s.yaml", "--set=seeds="]) is None  # not empty
    # after another command's --, "" is still its path; and a positional is no option's
    assert "trace info: an empty argument (" in empty_argument(["trace", "info", "--", ""])
    assert "run: an empty argument (" in empty_argument(["run", "--title=T", ""])
    # click took "-o=" as the value "=", and wrote a file of that name
    assert "trace gen: -o: an empty value" in empty_argument(["trace", "gen", "fib", "-o="])


def test_a_run_folder_whose_record_is_a_folder_is_refused_before_the_run(cli, fib_trace, tmp_path):
    """The run was simulated whole, then failed to write result.json, leaving config.json
    and timeline.npz of a run without a record."""
    (tmp_path / "o" / "result.json").mkdir(parents=True)
    code, _, err = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-o", tmp_path / "o")
    assert code == 2
    assert "result.json there is a folder, not a run's file" in one_line(err)
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["result.json"]


@pytest.mark.parametrize(
    ("present", "message"),
    [
        ("point.json", "a sweep point's folder"),
        ("row.json", "a sweep point's folder"),
        ("points/", "a sweep's output folder (it holds points/)"),
        ("points/p1/point.json", "a sweep's folder of points"),
    ],
)
def test_run_out_into_a_sweep_folder_is_refused(cli, fib_trace, tmp_path, present, message):
    """A run's files written into a sweep point's folder replaced the point's files and
    left its row saying another run; into a sweep's output folder they sat among its
    points.  Both were accepted; nothing is written now."""
    out = tmp_path / "o"
    out.mkdir()
    if present.endswith("/"):
        (out / present.rstrip("/")).mkdir()
    else:
        (out / present).parent.mkdir(parents=True, exist_ok=True)
        (out / present).write_text("{}")
    if present.startswith("points/p1"):
        out = out / "points"  # the points' folder itself: the run's files sat among them
    before = sorted(p.name for p in out.iterdir())
    code, _, err = cli("run", "-t", fib_trace, "-m", "itrs-scaling-2", "-o", out)
    assert code == 2
    assert f"--out {out}: {message}" in one_line(err)
    assert sorted(p.name for p in out.iterdir()) == before


@pytest.mark.parametrize(
    ("args", "made"),
    [
        (["trace", "gen", "fibb", "-o", "new/deeper/x.sst"], "new"),
        (["trace", "gen", "fib", "-p", "n=99", "-o", "new/x.sst"], "new"),
        (["capture", "-o", "new/c.sst", "--", "./nonexistent"], "new"),
    ],
)
def test_a_refused_output_leaves_no_folder_made_for_it(cli, tmp_path, monkeypatch, args, made):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(*args)
    assert code == 2, err
    one_line(err)
    assert not (tmp_path / made).exists()


def test_a_bare_command_group_prints_its_help_and_nothing_more(cli):
    code, out, err = cli("sweep")
    assert code == 2 and "run" in out + err and "simsched: error" not in err


def test_python_m_simsched_is_the_command():
    """``python -m simsched`` said "No module named simsched.__main__"."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "simsched", "run", "--machin", "x"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "see `simsched run --help`" in one_line(done.stderr)


def test_ctrl_c_while_the_command_line_library_loads_is_one_line_and_130():
    # An import hook sends SIGINT when main asks for typer: where an interrupt in a
    # command's first tenth of a second falls, every time.
    code = (
        "import importlib.abc, os, signal, sys\n"
        "class Interrupt(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'typer':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from simsched.cli import main\n"
        "main(['trace', 'info', 'nothing.sst'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "simsched: error: interrupted (Ctrl-C)\n"


def test_ctrl_c_after_the_command_has_ended_leaves_its_status():
    # a Ctrl-C while the interpreter shuts down (here from an atexit handler) came after a
    # whole run: it was a traceback, or exit 130 without a word once Python had restored
    # the signal's default action
    code = (
        "import atexit, os, signal, sys\n"
        "atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))\n"
        "sys.argv = ['simsched', 'machine', 'list']\n"
        "from simsched.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "itrs-scaling-16" in done.stdout


def test_version_with_more_arguments_is_refused(capsys):
    """``--version foo`` printed the version and ignored the rest (exit 0)."""
    from simsched.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--version", "foo"])
    assert info.value.code == 2
    assert (
        capsys.readouterr().err == "simsched: error: --version takes nothing after it, got 'foo'\n"
    )


def test_a_sigterm_inside_the_jit_compiler_is_asked_again_after_it(monkeypatch):
    """A SIGTERM that arrived in one of llvmlite's ctypes callbacks (Numba compiling) raised
    there, where ctypes prints the exception and drops it: the command ran on to its end
    and exited 0.  Such a signal is sent again 50 ms later; elsewhere it unwinds at once."""
    import signal
    import threading

    from simsched.cli import _in_llvm, _unwind_on_sigterm
    from simsched.errors import Terminated

    ns: dict = {}
    exec(compile("import sys; f = sys._getframe()", "/x/llvmlite/binding/ee.py", "exec"), ns)
    inside = ns["f"]
    assert _in_llvm(inside) and not _in_llvm(sys._getframe())
    timers: list[tuple] = []

    class Timer:
        def __init__(self, delay, fn, args):
            timers.append((delay, fn, args))

        def start(self):
            pass

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(threading, "Timer", Timer)
    try:
        got = _unwind_on_sigterm()
        handler = signal.getsignal(signal.SIGTERM)
        handler(signal.SIGTERM, inside)  # deferred: no exception
        assert got == [signal.SIGTERM]
        assert timers == [(0.05, os.kill, (os.getpid(), signal.SIGTERM))]
        with pytest.raises(Terminated):
            handler(signal.SIGTERM, sys._getframe())
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_name_with_a_newline_or_a_byte_not_utf8_stays_on_one_line(cli, tmp_path):
    # the message printed the name as it was: a newline in it made two lines
    for name, written in (("a\nb.sst", "a\\nb.sst"), ("a\x1b[2Jb.sst", "a\\x1b[2Jb.sst")):
        code, _, err = cli("trace", "info", tmp_path / name)
        assert code == 2 and f"{written}: no such trace file" in one_line(err)
    code, _, err = cli("calibrate", "-m", os.fsdecode(bytes(tmp_path) + b"/n\xff.yaml"))
    assert code == 2 and "n\\xff.yaml: no such file" in one_line(err)  # was \udcff


def test_an_option_that_is_no_number_is_refused_without_pydantics_words(cli, tmp_path):
    code, _, err = cli("coarsen", tmp_path / "p.npz", "-m", "itrs-scaling-2", "-K", "abc")
    line = one_line(err)
    assert code == 2 and "Invalid value for '-K' / '--factor': 'abc' is not a number" in line
    assert "Value error" not in line
