"""The `simsched profile`, `coarsen` and `regrain` commands."""

from __future__ import annotations

import json

import pytest

from simsched.cli import main
from simsched.profile import setassoc_misses
from simsched.profile.coarsen import TABLE_COLUMNS
from simsched.trace import open_trace, validate
from tests.profile._traces import build_random, machine_file


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_profile_coarsen_regrain_end_to_end(tmp_path, capsys):
    workloads = pytest.importorskip("simsched.workloads")
    ms = tmp_path / "ms.sst"
    workloads.generate("mergesort", ms, n=8192, grain=128)
    prof = tmp_path / "ms.prof"
    fig = tmp_path / "ms.png"
    code, out, err = run(
        [
            "profile",
            ms,
            "--json",
            "--verify",
            "-o",
            prof,
            "--plot",
            fig,
            "--machine",
            "itrs-scaling-16",
        ],
        capsys,
    )
    assert code == 0, err
    res = json.loads(out)
    assert res["line"] == 128 and res["verified_against_setassoc"] is True
    sizes = res["sizes"]
    assert sizes[0] == 16 << 10 and sizes[-1] == 64 << 20
    with open_trace(ms) as t:
        fa = setassoc_misses(t, sizes=sizes, line=128)
    assert [res["misses"][str(s)] for s in sizes] == fa[0].tolist()
    assert fig.stat().st_size > 10_000
    table = tmp_path / "t.csv"
    code, out, err = run(
        ["coarsen", prof, "--machine", "itrs-scaling-4", "-K", "1.0", "-o", table, "--json"], capsys
    )
    assert code == 0, err
    summ = json.loads(out)
    assert summ["merged_groups"] > 0 and summ["tasks"] < summ["strands"]
    # the table is CSV: a name of another format wrote CSV under it
    wrong = tmp_path / "t.parquet"
    code, _, err = run(["coarsen", prof, "--machine", "itrs-scaling-4", "-o", wrong], capsys)
    assert code == 2 and "--out" in err and "the parallelization table is CSV" in err
    assert not wrong.exists()
    coarse = tmp_path / "coarse.sst"
    code, _, err = run(["regrain", ms, "--table", table, "-o", coarse], capsys)
    assert code == 0, err
    assert validate(coarse)["strands"] < summ["strands"]
    # -m, as run and compare spell --machine
    again = tmp_path / "again.sst"
    code, _, err = run(
        ["regrain", ms, "--table", table, "-o", again, "-m", "itrs-scaling-4"], capsys
    )
    assert code == 0, err
    assert again.read_bytes() == coarse.read_bytes()
    code, out, err = run(["coarsen", prof, "-m", "itrs-scaling-4", "--json"], capsys)
    assert code == 0 and json.loads(out)["merged_groups"] == summ["merged_groups"], err


def test_profile_table_output_and_sizes(tmp_path, capsys):
    src = build_random(tmp_path / "r.sst", 4)
    code, out, _ = run(["profile", src, "--sizes", "1K,4K", "--line", "64"], capsys)
    assert code == 0 and "1 KB" in out and "4 KB" in out


def test_profile_names_sizes_that_do_not_fit_the_line(tmp_path, capsys):
    """The profile's own message did not say which option held the bad size."""
    src = build_random(tmp_path / "r.sst", 4)
    for sizes, message in (("100", "cache size 100 bytes is not a whole number of 64-byte"),
                           ("4K,1K", "are not strictly increasing"),
                           # was "sizes[0]=0: must be between 1 and ...", the Python words
                           ("0", "0 is not a cache size (1 byte to 2^40)")):  # fmt: skip
        code, out, err = run(["profile", src, "--sizes", sizes, "--line", "64"], capsys)
        assert code == 2 and out == "" and err.startswith("simsched: error: --sizes: "), err
        assert message in err


def test_profile_names_a_line_larger_than_the_default_sizes(tmp_path, capsys):
    """The profile's own message named neither --line nor the default sizes it came from."""
    src = build_random(tmp_path / "r.sst", 4)
    code, out, err = run(["profile", src, "--line", "65536"], capsys)
    assert code == 2 and out == ""
    assert err == (
        "simsched: error: --line 65536: cache size 16384 bytes is smaller than a 65536-byte line "
        "(the smallest default size; choose sizes with --sizes)\n"
    )


def test_profile_table_output_reports_the_check_and_the_figure(tmp_path, capsys):
    """--verify and --plot said nothing outside --json: the user could not tell they ran."""
    src = build_random(tmp_path / "r.sst", 4)
    fig = tmp_path / "r.png"
    args = ["profile", src, "--sizes", "1K,4K", "--line", "64", "--verify", "--plot", fig]
    code, _, err = run(args, capsys)
    assert code == 0 and fig.is_file(), err
    assert "verified: the SetAssoc replay gives the same misses" in err
    assert f"wrote {fig}" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["profile", "{src}", "--sizes", "4K,1K"], "not strictly increasing"),
        (["profile", "{src}", "--sizes", "abc"], "--sizes"),
        (["profile", "{src}", "--sizes", "16Q"], "--sizes: '16Q': unknown unit 'Q' (B, K/KB/KiB"),
        (["profile", "{src}", "--sizes", ""], "profile: an empty argument after --sizes"),
        (["profile", "{src}", "--sizes", "16K,,64K"], "--sizes '16K,,64K': item 2 is empty"),
        (["profile", "{src}", "--sizes", "16K,"], "--sizes '16K,': item 2 is empty"),
        (["profile", "{src}", "--sizes", "100", "--line", "64"], "100 bytes is not a whole"),
        (["profile", "{src}", "--sizes", "16K,30000", "--line", "64"], "30000 bytes"),
        (["profile", "{src}", "--line", "48"], "power of two"),
        (["profile", "{src}", "--line", "64", "--machine", "no-such"], "give one of them"),
        (["profile", "{tmp}/missing.sst"], "missing.sst"),
        (["profile", "{src}", "-o", "{tmp}/p.txt"], "--out {tmp}/p.txt: a profile is a NumPy"),
        (["profile", "{src}", "-o", "{tmp}/p.csv"], "name it .npz or .prof"),
        (["coarsen", "{tmp}/bad.prof", "--machine", "itrs-scaling-4"], "bad.prof"),
        (["coarsen", "{tmp}/r.prof", "--machine", "no-such-machine"], "no-such-machine"),
        (["regrain", "{src}", "--table", "{tmp}/bad.csv", "-o", "{tmp}/o.sst"], "bad.csv"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys, args, message):
    src = build_random(tmp_path / "r.sst", 4)
    run(["profile", src, "--sizes", "1K,4K", "-o", tmp_path / "r.prof"], capsys)
    (tmp_path / "bad.prof").write_bytes(b"garbage")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    argv = [a.format(src=src, tmp=tmp_path) for a in args]
    code, _, err = run(argv, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message.format(tmp=tmp_path) in lines[0], err
    assert not (tmp_path / "p.txt").exists() and not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_outputs_that_cannot_be_written_are_refused_before_the_pass(
    tmp_path, capsys, monkeypatch, option
):
    src = build_random(tmp_path / "r.sst", 4)
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    ran = []
    monkeypatch.setattr("simsched.profile.profile_trace", lambda *a, **k: ran.append(1))
    for target, why in (("file/p.png", "is a file, not a folder"), ("link/p.png", "not exist")):
        code, _, err = run(["profile", src, option, tmp_path / target], capsys)
        assert code == 2 and not ran, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and f"{option} {tmp_path / target}: " in lines[0], err
        assert why in lines[0]
    assert (tmp_path / "file").read_text() == "keep me" and not (tmp_path / "nowhere").exists()


def test_out_and_plot_on_one_file_are_refused_before_the_pass(tmp_path, capsys, monkeypatch):
    src = build_random(tmp_path / "r.sst", 4)
    (tmp_path / "p.png").write_text("keep me")
    (tmp_path / "link.png").symlink_to(tmp_path / "p.png")
    ran = []
    monkeypatch.setattr("simsched.profile.profile_trace", lambda *a, **k: ran.append(1))
    for plot in ("p.png", "link.png", "new.png"):
        out = tmp_path / ("new.png" if plot == "new.png" else "p.png")
        code, _, err = run(["profile", src, "-o", out, "--plot", tmp_path / plot], capsys)
        assert code == 2 and not ran, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "is also the --out file" in lines[0], err
    assert (tmp_path / "p.png").read_text() == "keep me" and not (tmp_path / "new.png").exists()


def test_a_pgf_plot_without_tex_is_refused_before_the_pass(tmp_path, capsys, monkeypatch):
    """--plot fig.pgf without TeX ran the whole pass, wrote the profile, then ended in a
    traceback (or, after save learnt to refuse it, an error after the long pass)."""
    src = build_random(tmp_path / "r.sst", 4)
    ran = []
    monkeypatch.setattr("simsched.profile.profile_trace", lambda *a, **k: ran.append(1))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no TeX on the path
    out, fig = tmp_path / "r.prof", tmp_path / "ws.pgf"
    code, _, err = run(["profile", src, "-o", out, "--plot", fig], capsys)
    assert code == 2 and not ran, err
    assert err.strip().endswith(f"{fig}: a PGF figure needs xelatex (TeX) to lay out its "
                                "text, and xelatex is not installed; install TeX or save as "
                                ".pdf or .svg")  # fmt: skip
    assert not out.exists() and not fig.exists()


def test_a_bad_size_is_named_once(tmp_path, capsys):
    """The message names the size once, not once more inside the parser's own words."""
    src = build_random(tmp_path / "r.sst", 4)
    code, _, err = run(["profile", src, "--sizes", "1K,16Q"], capsys)
    assert code == 2 and err.count("16Q") == 1, err


def test_coarsen_to_dev_stdout_writes_only_the_table(tmp_path):
    """``coarsen -o /dev/stdout``: stdout is the CSV table alone, the summary on stderr (it
    followed the table on stdout)."""
    import csv
    import io

    from simsched.workloads import generate
    from tests.cli.conftest import run_process

    ms, prof = tmp_path / "ms.sst", tmp_path / "ms.prof"
    generate("mergesort", ms, n=8192, grain=128)
    assert run_process("profile", ms, "--line", "128", "-o", prof).returncode == 0
    proc = run_process("coarsen", prof, "--machine", "itrs-scaling-4", "-o", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0][:2] == ["machine", "cache"] and len(rows) > 1
    assert all(len(r) == len(rows[0]) for r in rows)
    assert "1 group merged, 1150 strands -> 1 task\n" in proc.stderr  # "1 groups", "1 tasks"


def test_regrain_reads_the_machine_as_profile_and_coarsen_do(tmp_path, capsys):
    """coarsen -m custom.yaml wrote rows for machine custom; regrain -m custom.yaml said
    "the table has no rows for machine 'custom.yaml'"."""
    src = build_random(tmp_path / "r.sst", 21)
    yml = machine_file(tmp_path / "custom.yaml")
    prof, table = tmp_path / "r.prof", tmp_path / "t.csv"
    code, _, err = run(["profile", src, "-m", yml, "--sizes", "1K,4K", "-o", prof], capsys)
    assert code == 0, err
    code, _, err = run(["coarsen", prof, "-m", yml, "-o", table], capsys)
    assert code == 0, err
    coarse = tmp_path / "c.sst"
    code, _, err = run(["regrain", src, "--table", table, "-o", coarse, "-m", yml], capsys)
    assert code == 0 and err == f"{coarse}: 53 strands -> 1 strand (1 group merged)\n", err
    other = machine_file(tmp_path / "other.yaml", name="other")
    code, _, err = run(
        ["regrain", src, "--table", table, "-o", tmp_path / "x.sst", "-m", other], capsys
    )
    assert code == 2 and err == (
        f"simsched: error: {table}: the table has no rows for machine 'other' (the name in "
        f"{other}); it holds custom\n"
    )
    assert not (tmp_path / "x.sst").exists()


def test_regrain_refuses_an_out_that_is_its_trace_or_table(tmp_path, capsys):
    src = build_random(tmp_path / "r.sst", 4)
    table = tmp_path / "t.csv"
    table.write_text(",".join(TABLE_COLUMNS) + "\n")
    kept = src.read_bytes()
    for out, what in ((src, "the trace"), (table, "the table")):
        code, _, err = run(["regrain", src, "--table", table, "-o", out], capsys)
        assert code == 2 and err == (
            f"simsched: error: --out {out}: is {what} this command reads; writing there would "
            "replace it (choose another file)\n"
        )
    assert src.read_bytes() == kept and table.read_text() == ",".join(TABLE_COLUMNS) + "\n"


def test_regrain_of_an_empty_table_says_nothing_is_merged(tmp_path, capsys):
    """The rule chose no group of more than one strand: the trace is written unchanged, and
    the command says so (it said "N strands -> N strands (0 groups merged)")."""
    src = build_random(tmp_path / "r.sst", 21)
    table, coarse = tmp_path / "t.csv", tmp_path / "c.sst"
    table.write_text(",".join(TABLE_COLUMNS) + "\n")
    code, out, err = run(["regrain", src, "--table", table, "-o", coarse], capsys)
    n = validate(src)["strands"]
    assert code == 0 and out == ""
    assert n > 1
    assert err == f"{coarse}: the table chose no group to merge; {n} strands, as in the trace\n"
    assert validate(coarse)["strands"] == n


@pytest.mark.parametrize(
    "args, message",
    [
        # profiled with 1- and 2-byte lines, which --line alone refused
        (
            ["--line", "1", "--sizes", "16K"],
            "--line 1: a line size is a power of two from 4 to 65536 bytes",
        ),
        (
            ["--line", "131072"],
            "--line 131072: a line size is a power of two from 4 to 65536 bytes",
        ),
        (
            ["--line", "64", "-m", "itrs-scaling-1"],
            "--line and --machine both give the line size: give one of them",
        ),
    ],
)
def test_profile_line_checks_are_profile_traces(tmp_path, capsys, args, message):
    src = build_random(tmp_path / "r.sst", 4)
    code, out, err = run(["profile", src, *args], capsys)
    assert code == 2 and out == "" and err == f"simsched: error: {message}\n"
