"""Results store: Parquet-safe tables, the --where parser, export, ordering."""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError, OutputError, command_line
from simsched.experiments.store import (
    consolidate,
    export_results,
    filter_frame,
    load_results,
    parse_where,
    point_dir,
    read_row,
    rows_to_frame,
    save_row,
    select_columns,
    sort_rows,
)
from tests.blocking import raised_within


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workload": ["ms", "ms", "hj", "hj"],
            "cores": [1, 16, 4, 32],
            "speedup": [1.0, 9.5, 3.1, 12.0],
            "ok": [True, True, False, True],
            "machine": ["itrs-scaling-1", "itrs-scaling-16", "itrs-scaling-4", "itrs-scaling-32"],
        }
    )


def test_warn_callbacks_and_study_folders_are_checked_at_the_call(tmp_path):
    """warn=5 failed only when a warning came ("'int' object is not callable");
    study_results(None, ...) failed in pathlib and preferred='' gave results/ itself."""
    from simsched.experiments.store import filter_frame, load_results, study_results

    with pytest.raises(ConfigError, match=r"^warn"):
        filter_frame(frame(), ["scheduler=ws"], warn=5)
    with pytest.raises(ConfigError, match=r"^warn"):
        load_results(tmp_path, warn=5)
    with pytest.raises(ConfigError, match=r"^study"):
        study_results(None, "small")
    for preferred in ("", None, "a/b"):
        with pytest.raises(ConfigError, match=r"^preferred=.*: expected a sweep's folder name"):
            study_results(tmp_path, preferred)
    assert study_results(tmp_path, "medium") == tmp_path / "results" / "small"


def test_a_damaged_tables_lists_and_bytes_are_read_not_raised():
    """A Parquet table with lists or dicts as labels failed to load (same_labels: "unhashable
    type"), and --where on a binary column of bytes that are not UTF-8 failed in
    astype(str) (UnicodeDecodeError), each with a traceback."""
    from simsched.experiments.store import same_labels

    df = pd.DataFrame(
        {
            "workload": ["h", "h"],
            "machine": ["m", "m"],
            "scheduler": [{"a": 1}, {"a": 1}],
            "seed": [[1, 2], [1, 2]],
            "blob": [b"\x00\xff", b"ok"],
        }
    )
    assert len(same_labels(df)) == 2
    assert list(filter_frame(df, ["blob=ok"])["blob"]) == [b"ok"]
    assert filter_frame(df, ["blob=x"]).empty


def test_where_operators():
    df = frame()
    assert list(filter_frame(df, ["workload=ms"])["cores"]) == [1, 16]
    assert list(filter_frame(df, ["workload==hj", "cores>4"])["cores"]) == [32]
    assert list(filter_frame(df, ["cores=1|32"])["cores"]) == [1, 32]
    assert list(filter_frame(df, ["machine!=itrs-scaling-1|itrs-scaling-4"])["cores"]) == [16, 32]
    assert list(filter_frame(df, ["speedup<=3.1"])["cores"]) == [1, 4]
    assert list(filter_frame(df, ["ok=false"])["cores"]) == [4]
    assert list(filter_frame(df, ["cores >= 16"])["cores"]) == [16, 32]


def test_a_text_value_no_row_has_is_warned_of_with_the_nearest():
    """``scheduler=pfd`` printed "0 rows" and nothing else."""
    said: list[str] = []
    assert filter_frame(frame(), ["workload=mss"], said.append).empty
    assert said == ["wheres item 'workload=mss': no row has workload 'mss' (did you mean ms?)"]
    said.clear()
    assert len(filter_frame(frame(), ["workload!=xyz|hj"], said.append)) == 2
    assert said == [
        "wheres item 'workload!=xyz|hj': no row has workload 'xyz' (its values: hj, ms)"
    ]
    said.clear()
    with command_line():  # the command line names the option typed
        filter_frame(frame(), ["workload=mss"], said.append)
    assert said == ["--where 'workload=mss': no row has workload 'mss' (did you mean ms?)"]
    said.clear()
    filter_frame(frame(), ["workload=ms", "cores=3", "ok=true"], said.append)  # numbers: no
    assert said == []


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("nope=1", "no column 'nope'"),
        ("cores=abc", "numeric, not 'abc'"),
        ("workload>3", "needs a numeric column"),
        ("cores", "expected COLUMN OP VALUE"),
        ("__import__('os').system('x')", "expected COLUMN OP VALUE"),
        ("ok=maybe", "true/false"),
        # every order comparison with NaN is false: 0 rows and exit status 0
        ("cores<nan", "< needs a number, not 'nan'"),
        # a byte that is not UTF-8 on the command line: pyarrow's UnicodeEncodeError
        ("workload=ms\udcff", "'ms\\\\udcff' is not UTF-8 text"),
    ],
)
def test_where_errors(expr, message):
    """A Python caller is told of the item of its ``wheres`` (it was told of --where, an
    option it cannot give); the command line of the --where typed."""
    with pytest.raises(ConfigError, match=message) as info:
        filter_frame(frame(), [expr])
    assert str(info.value).startswith(f"wheres item {expr!r}: ")
    with command_line(), pytest.raises(ConfigError, match=message) as info:
        filter_frame(frame(), [expr])
    assert str(info.value).startswith(f"--where {expr!r}: ")


@given(st.text(max_size=30))
def test_where_parser_never_evaluates(text):
    # Anything either parses into (known column, operator, value) or is a ConfigError.
    try:
        col, op, _ = parse_where(text, ["cores", "workload"])
    except ConfigError:
        return
    assert col in ("cores", "workload") and op in ("=", "!=", "<", "<=", ">", ">=")


def test_mixed_types_become_text_and_nested_values_json():
    df = rows_to_frame(
        [
            {"a": 1, "b": {"x": 1}, "c": 1.5, "d": None},
            {"a": "two", "b": [1, 2], "c": 2, "d": 3},
        ]
    )
    assert list(df["a"]) == ["1", "two"]
    assert list(df["b"]) == ['{"x":1}', "[1,2]"]  # canonical JSON text
    assert df["c"].dtype.kind == "f" and str(df["d"].dtype) == "Int64"


def test_counts_stay_integers_beside_a_failed_point(tmp_path, capsys):
    from simsched.cli import main

    ok = {"point_id": "a", "workload": "w", "status": "ok", "makespan_cycles": 1234}
    ok["speedup"] = 2.0
    save_row(tmp_path, "a", ok)
    save_row(tmp_path, "b", {"point_id": "b", "workload": "w", "status": "error"})
    pq = export_results(tmp_path, tmp_path / "out.parquet")
    import pyarrow.parquet as pa_pq

    assert str(pa_pq.read_schema(pq).field("makespan_cycles").type) == "int64"
    for source in (tmp_path, pq, export_results(tmp_path, tmp_path / "first.csv")):
        text = export_results(source, tmp_path / "out.csv").read_text()
        assert ",1234," in text and "1234.0" not in text and ",2.0" in text
    # in memory the count is a float beside a NaN, as arithmetic and figures expect
    assert load_results(tmp_path)["makespan_cycles"].dtype == "float64"
    assert str(load_results(pq, nullable_int=True)["makespan_cycles"].dtype) == "Int64"
    ok_only = export_results(tmp_path, tmp_path / "ok.parquet", ["status=ok"])
    assert load_results(ok_only)["makespan_cycles"].dtype == "int64"
    # "no" was true: the counts came back as Int64
    with pytest.raises(ConfigError, match="^nullable_int='no': expected True or False"):
        load_results(pq, nullable_int="no")
    with pytest.raises(ConfigError, match="^refresh=0: expected True or False"):
        load_results(tmp_path, refresh=0)
    with pytest.raises(SystemExit):
        main(["results", "show", str(tmp_path), "--columns", "status,makespan_cycles"])
    shown = capsys.readouterr().out
    assert "1234" in shown and "<NA>" not in shown and "nan" not in shown.lower()


def test_consolidate_export_and_order(tmp_path):
    for i, (wl, m) in enumerate([("ms", "itrs-45nm-10"), ("ms", "itrs-45nm-2"), ("fib", "x")]):
        save_row(
            tmp_path,
            f"id{i}",
            {"point_id": f"id{i}", "status": "ok", "workload": wl, "machine": m, "v": i},
        )
    (point_dir(tmp_path, "unfinished")).mkdir(parents=True)
    path = consolidate(tmp_path)
    df = pd.read_parquet(path)
    assert list(df["machine"]) == ["x", "itrs-45nm-2", "itrs-45nm-10"]
    assert len(load_results(tmp_path)) == 3
    csv = export_results(tmp_path, tmp_path / "out.csv", ["workload=ms"])
    assert len(pd.read_csv(csv)) == 2
    pq = export_results(tmp_path, tmp_path / "out.parquet")
    assert len(load_results(pq)) == 3
    assert len(load_results(csv)) == 2
    with pytest.raises(ConfigError, match="not a sweep output folder"):
        load_results(tmp_path / "points" / "id0")
    with pytest.raises(ConfigError, match="no column 'zz'"):
        select_columns(df, ["zz"])
    assert sort_rows(df.iloc[::-1]).equals(df)


def test_an_unknown_column_of_columns_or_where_names_the_columns_it_may_mean():
    """`results show --columns makespan` listed the first 12 columns, a sweep's parameters,
    then "...", even when they were all, and never makespan_cycles.  --where said nothing
    at all when no column contained the name: both now tell it alike (params.column_hint)."""
    few = pd.DataFrame({"workload": ["w"], "makespan_cycles": [1]})
    with pytest.raises(
        ConfigError, match=r"^columns: no column 'zz' \(have: workload, makespan_cycles\)$"
    ):
        select_columns(few, ["zz"])
    with command_line(), pytest.raises(ConfigError, match=r"^--columns: no column 'zz' "):
        select_columns(few, ["zz"])
    with pytest.raises(
        ConfigError,
        match=r"^wheres item 'zz=1': no column 'zz' \(have: workload, makespan_cycles\)$",
    ):
        filter_frame(few, ["zz=1"])
    with pytest.raises(
        ConfigError, match=r"no column 'Makespan' \(did you mean makespan_cycles\?\)$"
    ):
        filter_frame(few, ["Makespan<3"])
    wide = pd.DataFrame({**{f"workload.p{i}": [i] for i in range(12)}, "makespan_cycles": [1]})
    with pytest.raises(
        ConfigError, match=r"no column 'Makespan' \(did you mean makespan_cycles\?\)$"
    ):
        select_columns(wide, ["Makespan"])
    with pytest.raises(
        ConfigError, match=r"\(have: workload.p0, .*, workload.p11, \.\.\. \(13 columns\)\)$"
    ):
        select_columns(wide, ["zz"])


def test_nested_fields_are_objects_in_json_and_text_in_tables(tmp_path, capsys):
    from simsched.cli import main
    from simsched.engine.record import NESTED_FIELDS, nest_fields

    rec = {"params": '{"a":1}', "run.machine_config": '{"x":[1,2]}', "error": "{oops", "n": 3}
    assert nest_fields(rec) == {
        "params": {"a": 1},
        "run.machine_config": {"x": [1, 2]},
        "error": "{oops",
        "n": 3,
    }
    assert "scheduler_counters" in NESTED_FIELDS
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkloads: [{generator: fib, params: {n: 6}}]\n"
        "machines: [itrs-scaling-1]\nschedulers: [{name: ws, params: {spawn_policy: parent-first}}]\n"
    )
    with pytest.raises(SystemExit) as info:
        main(["sweep", "run", str(spec), "--workers", "0", "--no-progress"])
    assert info.value.code in (0, None), capsys.readouterr().err
    capsys.readouterr()
    out = tmp_path / "results" / "s"
    row = json.loads(next((out / "points").glob("*/row.json")).read_text())
    assert row["scheduler_params"] == {"spawn_policy": "parent-first"}
    assert isinstance(row["dram_by_node"], list) and isinstance(row["machine_config"], dict)
    table = pd.read_parquet(out / "results.parquet")
    assert table["scheduler_params"][0] == '{"spawn_policy":"parent-first"}'
    with pytest.raises(SystemExit):
        main(
            [
                "results",
                "show",
                str(out),
                "--format",
                "json",
                "--columns",
                "scheduler_params,dram_by_node",
            ]
        )
    shown = json.loads(capsys.readouterr().out)
    assert shown[0]["scheduler_params"] == {"spawn_policy": "parent-first"}
    assert shown[0]["dram_by_node"] == row["dram_by_node"]


def _rows(folder, ids) -> None:
    for i in ids:
        save_row(
            folder,
            f"id{i}",
            {"point_id": f"id{i}", "workload": "ms", "machine": f"m{i}", "status": "ok", "v": i},
        )


@pytest.fixture
def read_only(monkeypatch):
    """Make every write under the folders added to the returned set fail as on a read-only
    file system (root ignores permission bits, so chmod cannot stand in for it)."""
    import errno
    import tempfile
    from pathlib import Path

    real = tempfile.mkstemp
    folders: set = set()

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and any(Path(dir).is_relative_to(f) for f in folders):
            raise OSError(errno.EROFS, "Read-only file system", str(dir))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return folders


def test_current_table_is_read_without_writing(tmp_path, read_only):
    _rows(tmp_path, range(3))
    consolidate(tmp_path)
    before = (tmp_path / "results.parquet").stat().st_mtime_ns
    read_only.add(tmp_path)
    df = load_results(tmp_path)
    assert list(df["v"]) == [0, 1, 2]
    assert (tmp_path / "results.parquet").stat().st_mtime_ns == before


def test_stale_table_in_a_read_only_folder_is_built_in_memory(tmp_path, read_only):
    """Used to fail: 'results.parquet: cannot write (read-only file system)'."""
    _rows(tmp_path, range(2))
    consolidate(tmp_path)
    _rows(tmp_path, [2])  # a point finished after the table was built: it is stale
    read_only.add(tmp_path)
    df = load_results(tmp_path)
    assert list(df["v"]) == [0, 1, 2]
    old = pd.read_parquet(tmp_path / "results.parquet")
    assert len(old) == 2  # nothing was written
    read_only.clear()
    rebuilt = load_results(tmp_path)  # writable again: rebuilt, and equal to the in-memory one
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 3
    pd.testing.assert_frame_equal(df, rebuilt)


def test_a_changed_row_makes_the_table_stale(tmp_path):
    _rows(tmp_path, range(2))
    consolidate(tmp_path)
    row = point_dir(tmp_path, "id1") / "row.json"
    data = json.loads(row.read_text())
    save_row(tmp_path, "id1", {**data, "v": 99})  # e.g. --retry-failed rewrote it
    assert list(load_results(tmp_path)["v"]) == [0, 99]
    # a table from before fingerprints (no metadata) counts as stale and is rebuilt
    pd.read_parquet(tmp_path / "results.parquet").to_parquet(tmp_path / "results.parquet")
    _rows(tmp_path, [5])
    assert list(load_results(tmp_path)["v"]) == [0, 99, 5]


@pytest.mark.parametrize("stale", [False, True])
def test_results_commands_read_a_read_only_folder(tmp_path, read_only, capsys, stale):
    from simsched.cli import main

    sweep = tmp_path / "sweep"
    _rows(sweep, range(3))
    consolidate(sweep)
    if stale:
        _rows(sweep, [3])
    read_only.add(sweep)

    def run(*args: str) -> None:
        with pytest.raises(SystemExit) as info:
            main(list(args))
        assert info.value.code == 0

    run("results", "show", str(sweep), "--format", "csv", "--columns", "point_id,v")
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"id{i},{i}" for i in range(4 if stale else 3)
    ]
    run("results", "export", str(sweep), "-o", str(tmp_path / "out.csv"))
    assert len(pd.read_csv(tmp_path / "out.csv")) == (4 if stale else 3)
    run("plot", "sweep", str(sweep), "--x", "v", "--y", "v", "-o", str(tmp_path / "f.png"))
    assert (tmp_path / "f.png").stat().st_size > 0
    assert sorted(p.name for p in sweep.iterdir()) == ["points", "results.parquet"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[1, 2]", "not a JSON object (list)"),
        (b'"x"', "not a JSON object (str)"),
        (b"null", "not a JSON object (NoneType)"),
        (b"", "not valid JSON"),
        (b"{x", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON (byte 0 is not UTF-8)"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON (nested too deeply)"),
        (b'{"point_id": "id9", "v": 1180591620717411303424}', "field 'v' is out of the 64-bit"),
        # pyarrow failed on it with a traceback, at every read of the results
        (b'{"point_id": "id9", "status": "ok", "w": "a\\udcff"}', "field 'w' holds text that"),
        # taken as they were: a blank row, a row of another point, a column turned to text
        (b"{}", "no point_id, not its folder's name (id9)"),
        (b'{"point_id": "zzz", "status": "ok"}', "point_id 'zzz', not its folder's name"),
        (b'{"point_id": "id9", "status": 5}', "status 5 is not text"),
        (
            b'{"point_id": "id9", "status": "ok", "record_version": 1, "cores": [1, 2]}',
            "field 'cores' is [1, 2], not a number",
        ),
        (
            b'{"point_id": "id9", "status": "ok", "record_version": 1, "makespan_cycles": "abc"}',
            "field 'makespan_cycles' is 'abc', not a number",
        ),
    ],
)
def test_a_damaged_row_is_left_out_and_reported_each_time(tmp_path, read_only, content, problem):
    """Used to fail with AttributeError, RecursionError or OverflowError, or to drop the row
    without a word."""
    _rows(tmp_path, range(2))
    bad = point_dir(tmp_path, "id9") / "row.json"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(content)
    (tmp_path / "points" / "stray.txt").write_text("not a point")  # no point: no warning
    for _ in range(2):  # built, then read from the current table: reported both times
        said: list[str] = []
        assert list(load_results(tmp_path, warn=said.append)["v"]) == [0, 1]
        assert len(said) == 1 and said[0].startswith(f"{bad}: {problem}"), said
    _rows(tmp_path, [2])
    read_only.add(tmp_path)  # stale in a read-only folder: built in memory, reported too
    said = []
    assert list(load_results(tmp_path, warn=said.append)["v"]) == [0, 1, 2]
    assert len(said) == 1 and problem in said[0]
    with pytest.warns(UserWarning, match="the point is left out"):
        load_results(tmp_path)  # library callers get a Python warning


def test_a_row_that_is_a_named_pipe_or_a_folder_is_left_out_and_reported(tmp_path):
    """A named pipe in a row.json's place blocked `results show`, `plot sweep` and
    `sweep status` for good."""
    _rows(tmp_path, range(2))
    for pid, make in (("id8", os.mkfifo), ("id9", os.mkdir)):
        point_dir(tmp_path, pid).mkdir(parents=True)
        make(point_dir(tmp_path, pid) / "row.json")
    said: list = []
    assert (
        raised_within(lambda: said.append(load_results(tmp_path, warn=said.append)), "load") == []
    )
    assert list(said.pop()["v"]) == [0, 1]
    assert [w.split(": ", 1)[1] for w in said] == [
        "is a named pipe, not a row file; the point is left out",
        "is a folder, not a row file; the point is left out",
    ]
    assert read_row(tmp_path, "id8") is None


def test_a_point_folder_whose_name_is_not_utf8_is_left_out_and_reported(tmp_path):
    """Hashing the rows' names to tell a current table failed with a UnicodeEncodeError
    and its traceback, at every read of the results."""
    _rows(tmp_path, range(2))
    odd = tmp_path / "points" / os.fsdecode(b"x\xffy")
    odd.mkdir()
    (odd / "row.json").write_text(json.dumps({"point_id": "x\udcffy", "status": "ok"}))
    said: list[str] = []
    assert list(load_results(tmp_path, warn=said.append)["v"]) == [0, 1]
    assert said == [f"{odd / 'row.json'}: field 'point_id' holds text that is not UTF-8 (a lone "
                    "surrogate); the point is left out"]  # fmt: skip


def test_a_warning_naming_a_folder_with_a_newline_is_one_line(tmp_path, capsys):
    """The warning printed the folder's name raw: a newline in it split the line."""
    from simsched.cli import main

    _rows(tmp_path, range(2))
    odd = tmp_path / "points" / "x\ny"
    odd.mkdir()
    (odd / "row.json").write_text("[1]")
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(tmp_path), "--format", "csv", "--columns", "v"])
    assert info.value.code == 0
    err = capsys.readouterr().err
    assert (
        err
        == f"warning: {tmp_path}/points/x\\ny/row.json: not a JSON object (list); the point is left out\n"
    )


def test_a_named_pipe_in_the_results_tables_place_is_not_written_into(tmp_path):
    """The table was rebuilt into the pipe, as into `-o /dev/stdout`: reading the results
    and `sweep run` waited for a reader for good."""
    _rows(tmp_path, range(2))
    os.mkfifo(tmp_path / "results.parquet")
    said: list = []
    assert raised_within(lambda: said.append(load_results(tmp_path)), "load_results") == []
    assert list(said[0]["v"]) == [0, 1]  # built in memory, as in a read-only folder
    [exc] = raised_within(lambda: consolidate(tmp_path), "consolidate")
    assert isinstance(exc, OutputError)
    assert str(exc).endswith("results.parquet: is a named pipe, not the sweep's results table")


def test_results_show_refuses_a_column_named_twice(tmp_path, capsys):
    """`--columns workload,workload` printed the column twice."""
    from simsched.cli import main

    save_row(tmp_path, "a", {"point_id": "a", "workload": "w", "status": "ok"})
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(tmp_path), "--columns", "workload, status,workload"])
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == ""
    assert captured.err.strip() == "simsched: error: --columns: 'workload' is named twice"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--columns", "nosuch"], "--columns: no column 'nosuch'"),
        (["--format", "xml"], "--format 'xml': use table, csv or json"),
    ],
)
def test_results_show_refuses_an_option_in_one_line_after_a_where_that_matches_nothing(
    tmp_path, capsys, args, error
):
    """The --where's warning came first: two lines for one refusal (and --format was
    asked only once the table was read)."""
    from simsched.cli import main

    save_row(tmp_path, "a", {"point_id": "a", "workload": "w", "status": "ok"})
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(tmp_path), "--where", "workload=zz", *args])
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == ""
    assert captured.err.startswith(f"simsched: error: {error}")
    assert len(captured.err.splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["results", "show", str(tmp_path), "--where", "workload=zz", "--columns", "workload"])
    assert capsys.readouterr().err.startswith("warning: --where 'workload=zz': no row has")


@pytest.mark.parametrize("columns", ["", ",", " , "])
def test_results_show_refuses_columns_without_a_name(tmp_path, capsys, columns):
    """`--columns ,` printed every column of the table; `--columns ""` the default ones."""
    from simsched.cli import main

    save_row(tmp_path, "a", {"point_id": "a", "workload": "w", "status": "ok"})
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(tmp_path), "--columns", columns])
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == ""
    # an empty argument is refused before the command reads it, as any empty argument is
    said = (
        f"--columns {columns!r}: no column name (e.g. --columns workload,makespan_cycles)"
        if columns
        else "results show: an empty argument after --columns (an unset shell variable?)"
    )
    assert captured.err == f"simsched: error: {said}\n"


def test_an_exported_sweep_without_a_finished_point_reads_back(tmp_path):
    """Its CSV (a line break: no row, no column) was refused as "not a readable CSV
    table" by `results show` and `export` of it."""
    (tmp_path / "sweep" / "points").mkdir(parents=True)
    csv = export_results(tmp_path / "sweep", tmp_path / "none.csv")
    assert load_results(csv).empty
    assert load_results(export_results(csv, tmp_path / "again.csv")).empty


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("r.parquet", b"", "not a readable Parquet table"),
        ("r.parquet", b"PAR1junk", "not a readable Parquet table"),
        ("r.csv", b"", "not a readable CSV table"),
        ("r.csv", bytes(range(128, 256)), "not a readable CSV table"),
        ("r.csv", b'a,b\n1,"2\n', "not a readable CSV table"),
    ],
)
def test_damaged_results_files(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=f"^{path}: {message}"):
        load_results(path)
    only = tmp_path / "only"
    only.mkdir()
    (only / "results.parquet").write_bytes(b"junk")  # a table without its rows
    with pytest.raises(ConfigError, match="results.parquet: not a readable Parquet table"):
        load_results(only)


def _refused_by_every_reader(table, message, xy, tmp_path, capsys):
    """``load_results(table)`` raises ``message``, and ``results show``, ``results export``
    and ``plot sweep`` of ``table`` each exit 2 with it alone and write nothing."""
    from simsched.cli import main

    with pytest.raises(ConfigError) as info:
        load_results(table)
    assert str(info.value) == message

    for args in (
        ["results", "show", str(table)],
        ["results", "export", str(table), "-o", str(tmp_path / "out.csv")],
        ["plot", "sweep", str(table), "--x", xy[0], "--y", xy[1], "-o", str(tmp_path / "f.png")],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        captured = capsys.readouterr()
        assert exit_info.value.code == 2 and captured.out == ""
        assert captured.err == f"simsched: error: {message}\n"
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "f.png").exists()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_another_programs_table_is_refused_naming_what_it_lacks(tmp_path, capsys, suffix):
    """`results show small.csv` of a,b/1,2 printed a blank table and "1 row", and `plot
    sweep` and `results export` took it too."""

    path = tmp_path / f"small{suffix}"
    foreign = pd.DataFrame({"a": [1], "b": [2]})
    if suffix == ".csv":
        foreign.to_csv(path, index=False)
    else:
        foreign.to_parquet(path)
    message = (
        f"{path}: not a simsched results table (its columns a, b; a run's row has status, "
        "workload, machine, scheduler, ...; `simsched results export` writes one)"
    )
    _refused_by_every_reader(path, message, ("a", "b"), tmp_path, capsys)
    # a selection of a table's columns is one (results show --format csv --columns ...)
    pd.DataFrame({"scheduler": ["ws"], "speedup": [2.0]}).to_csv(tmp_path / "sel.csv", index=False)
    assert list(load_results(tmp_path / "sel.csv")["speedup"]) == [2.0]
    folder = tmp_path / "copied"  # a folder holding a table without its rows
    folder.mkdir()
    foreign.to_parquet(folder / "results.parquet")
    with pytest.raises(ConfigError, match="results.parquet: not a simsched results table"):
        load_results(folder)
    # a run's record as RunResult.to_parquet writes it is one
    pd.DataFrame({"status": ["ok"], "makespan_cycles": [5]}).to_parquet(tmp_path / "run.parquet")
    assert list(load_results(tmp_path / "run.parquet")["makespan_cycles"]) == [5]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("s.yaml", "not a sweep output folder or a results file (.parquet, .csv) (a sweep spec?"),
        ("r.json", "not a sweep output folder or a results file (.parquet, .csv)"),
        ("missing.csv", "no such sweep folder or results file"),
    ],
)
def test_a_path_that_is_no_results_says_what_it_is(tmp_path, name, message):
    path = tmp_path / name
    if name != "missing.csv":
        path.write_text("name: s\n")  # "no such ..." was said of files that were there
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {re.escape(message)}"):
        load_results(path)


def _damaged(table: bytes, at: slice, fill: int) -> bytes:
    """``table`` with the bytes at ``at`` set to ``fill``, sparing the leading PAR1 and the
    footer (its metadata, their length and the closing PAR1)."""
    data = bytearray(table)
    body = range(4, len(data) - int.from_bytes(data[-8:-4], "little") - 8)
    for i in body[at]:
        data[i] = fill
    return bytes(data)


@pytest.mark.parametrize("fill", [0x00, 0xFF])
def test_damaged_pages_behind_a_current_footer(tmp_path, capsys, fill):
    """Used to end in 'standard output:' and two lines of pyarrow's OSError: the footer and
    its fingerprint were intact, so the table was read as current."""
    from simsched.cli import main

    _rows(tmp_path, range(50))
    table = consolidate(tmp_path)
    table.write_bytes(_damaged(table.read_bytes(), slice(None), fill))
    said = f"^{table}: not a readable Parquet table \\(.*\\); delete it to rebuild it"
    with pytest.raises(ConfigError, match=said):
        load_results(tmp_path)
    with pytest.raises(ConfigError, match=f"^{table}: not a readable Parquet table"):
        load_results(table)
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(tmp_path)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"simsched: error: {table}: not a readable Parquet table")
    table.unlink()  # as the message says: the table is rebuilt from the rows
    assert list(load_results(tmp_path)["v"]) == list(range(50))


def test_every_damaged_byte_is_read_or_refused_in_one_line(tmp_path):
    """pyarrow reports most damaged pages as OSError but some (a dictionary index, a page's
    length) as ArrowInvalid, which was a traceback."""
    _rows(tmp_path, range(20))
    table = consolidate(tmp_path)
    good = table.read_bytes()
    refused = 0
    for at in range(0, len(good), 4):
        for fill in (0x00, 0xFF):
            damaged = _damaged(good, slice(at, at + 1), fill)
            if damaged == good:
                continue
            table.write_bytes(damaged)
            try:
                load_results(tmp_path)  # many bytes change values, not the format
            except ConfigError as exc:
                assert str(exc).startswith(f"{table}: not a readable Parquet table (")
                assert "\n" not in str(exc)
                refused += 1
    assert refused


def test_a_damaged_byte_in_a_text_column_is_refused_where_the_table_is_read(tmp_path):
    """pyarrow reads text without decoding it: the table was loaded, and `results export`
    ended in a traceback (ArrowException) when its CSV writer met the byte."""
    path = tmp_path / "r.parquet"
    frame = pd.DataFrame({"status": ["ok"], "machine": ["itrs-marker"], "makespan_cycles": [5]})
    frame.to_parquet(path, compression=None)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"itrs-marker", b"itrs\xffmarker"))
    with pytest.raises(
        ConfigError, match=f"^{path}: not a readable Parquet table \\(column 'machine'"
    ):
        load_results(path)


def test_filter_and_load_arguments_are_checked():
    df = frame()
    assert filter_frame(df, None).equals(df)  # no expression: every row
    with pytest.raises(ConfigError, match=r"df: expected a pandas DataFrame .* got None"):
        filter_frame(None, ["cores>1"])
    with pytest.raises(ConfigError, match=r"wheres='cores>1': expected a list"):
        filter_frame(df, "cores>1")
    with pytest.raises(ConfigError, match=r"path=None: expected a path"):
        load_results(None)


def test_a_column_named_twice_is_refused_by_name():
    """pandas failed with an AttributeError ('NotImplementedType' object has no attribute
    'reindex_like'), or the comparison called the duplicated numeric column text."""
    df = pd.DataFrame([[1, 2, "a", "c"], [3, 4, "b", "d"]], columns=["x", "x", "s", "s"])
    for expr in ("x=1", "x<2", "s=a"):
        with pytest.raises(
            ConfigError,
            match=rf"^wheres item '{expr}': the table has 2 columns named '{expr[0]}' "
            r"\(duplicated: 'x', 's'\); give each column",
        ):
            filter_frame(df, [expr])
    # a column named once is filtered on as before
    assert filter_frame(df.iloc[:, :3], ["s=b"]).shape == (1, 3)


def test_export_refuses_a_target_that_is_no_path(tmp_path):
    """Before: TypeError from pathlib for None."""
    save_row(tmp_path, "id0", {"point_id": "id0", "status": "ok", "workload": "ms"})
    for target in (None, 5):
        with pytest.raises(ConfigError, match=f"^target={target}: expected a path"):
            export_results(tmp_path, target)
    assert export_results(str(tmp_path), str(tmp_path / "out.csv")).is_file()


def test_rows_that_share_their_labels_are_reported(tmp_path, capsys):
    """An edited spec's old points stay in the folder under the same labels as the new
    ones: `results show`, `plot sweep` and the figure scripts mixed them without a word."""
    from simsched.cli import main

    sweep = tmp_path / "sweep"
    for pid, iters, seed in (("a", 3, 0), ("b", 4, 0), ("c", 3, 1), ("d", 3, 2), ("e", 4, 2)):
        labels = {"workload": "heat", "machine": "m4", "scheduler": "ws", "seed": seed}
        save_row(sweep, pid, {"point_id": pid, "status": "ok", **labels, "iters": iters})
    told: list[str] = []
    assert len(load_results(sweep, warn=told.append)) == 5
    assert told == [
        f"{sweep}: 4 rows share 2 sets of labels (workload, machine, scheduler, seed; e.g. "
        "heat / m4 / ws / seed 0): tables and figures mix them; rows of points the spec no "
        "longer has are the orphans `sweep status` counts"
    ]
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(sweep)])
    assert info.value.code == 0
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {sweep}: 4 rows share") and err.count("\n") == 1
    # distinct labels, or a table without them, say nothing
    told.clear()
    save_row(sweep, "b", {"point_id": "b", "status": "ok", "workload": "heat", "seed": 5})
    load_results(tmp_path / "sweep", warn=told.append)
    pd.DataFrame({"status": ["ok", "ok"], "workload": ["x", "x"]}).to_csv(
        tmp_path / "t.csv", index=False
    )
    load_results(tmp_path / "t.csv", warn=told.append)
    assert told == [told[0]] and "2 rows share 1 set of labels" in told[0]


@pytest.mark.parametrize("suffix", [".CSV", ".Parquet"])
def test_export_and_read_back_a_suffix_in_capitals(tmp_path, suffix):
    """-o X.CSV was refused ("export to a .csv or .parquet file"), and such a file could
    not be read back."""
    for i in range(2):
        save_row(
            tmp_path, f"id{i}", {"point_id": f"id{i}", "status": "ok", "workload": "w", "v": i}
        )
    out = export_results(tmp_path, tmp_path / f"X{suffix}")
    read = pd.read_csv if suffix == ".CSV" else pd.read_parquet
    assert list(read(out)["v"]) == [0, 1]
    assert list(load_results(out)["v"]) == [0, 1]


def test_a_parameter_of_a_later_row_stays_among_the_configuration_columns():
    """A workload parameter that the first row lacks came after every record field."""
    rows = [
        {"point_id": "a", "workload": "hj", "workload.n_build": 8, "status": "ok", "wall_s": 1.0},
        {"point_id": "b", "workload": "ms", "workload.n": 64, "status": "ok", "wall_s": 2.0},
    ]
    cols = list(rows_to_frame(rows).columns)
    assert cols.index("workload.n") < cols.index("status")
    assert cols[-1] == "wall_s" and set(cols) == {k for r in rows for k in r}


def test_results_show_names_the_columns_it_leaves_out(tmp_path, capsys):
    """Without --columns the table shows its usual columns; the others were left out
    without a word (a CSV of seed,value showed its seeds alone)."""
    from simsched.cli import main

    few = tmp_path / "few.csv"
    pd.DataFrame({"seed": [1, 2], "value": [3.5, 4.5]}).to_csv(few, index=False)
    many = tmp_path / "many.csv"
    pd.DataFrame({"seed": [1], **{f"c{i}": [i] for i in range(4)}}).to_csv(many, index=False)
    usual = tmp_path / "usual.csv"
    pd.DataFrame({"seed": [1], "scheduler": ["ws"]}).to_csv(usual, index=False)
    said = []
    for path, extra in ((few, []), (many, []), (usual, []), (few, ["--columns", "seed"])):
        with pytest.raises(SystemExit) as info:
            main(["results", "show", str(path), *extra])
        assert info.value.code == 0
        said.append(capsys.readouterr().out.splitlines()[-1])
    assert said == [
        "2 rows (1 more column: value; choose with --columns)",
        "1 row (4 more columns: --list-columns names them)",
        "1 row",
        "2 rows",
    ]


def test_mappings_and_lists_outside_the_nested_fields_are_rows_too(tmp_path):
    """A sweep's override may be a mapping (machine.caches.L1.prefetch: {streams: 16}) and a
    custom point function may add a list: such rows are simsched's own, not damage (they
    were once refused, and their points run again on every sweep run)."""
    row = {
        "point_id": "p1",
        "status": "ok",
        "record_version": 1,
        "cores": 16,
        "makespan_cycles": 100,
        "machine.caches.L1.prefetch": {"streams": 16, "distance": 4},
        "my_hist": [1, 2, 3],
    }
    save_row(tmp_path, "p1", row)
    said: list[str] = []
    df = load_results(tmp_path, warn=said.append)
    assert said == [] and list(df["point_id"]) == ["p1"]


def test_a_parallelization_table_is_not_taken_for_results(tmp_path, capsys):
    """`simsched coarsen -o t.csv` writes a table with a machine column, and `results show
    t.csv` printed its groups as twelve rows of results holding only machine and cores."""
    from simsched.machine import load_machine
    from simsched.profile import coarsen, profile_trace, write_table
    from simsched.trace import open_trace
    from simsched.workloads import generate

    trace = tmp_path / "fib.sst"
    generate("fib", trace, n=12)
    with open_trace(trace) as t:
        prof = profile_trace(t, machine="opteron-8380-4x4")
    table = tmp_path / "t.csv"
    write_table(coarsen(prof, load_machine("opteron-8380-4x4")).rows, table)
    message = (
        f"{table}: a parallelization table of `simsched coarsen`, not a results table "
        "(`simsched regrain --table` takes it)"
    )
    _refused_by_every_reader(table, message, ("cores", "depth"), tmp_path, capsys)
