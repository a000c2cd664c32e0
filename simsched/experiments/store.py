"""The results store: one folder per point, one Parquet table per sweep.

Layout of a sweep's output folder::

    <out>/points/<point_id>/point.json    the resolved point (written before it runs)
    <out>/points/<point_id>/row.json      its result row (written when it ends, ok or not)
    <out>/points/<point_id>/claim         held by the runner running it (experiments/claims.py)
    <out>/points/<point_id>/...           the run's config.json, result.json (also on failure)
    <out>/results.parquet                 every row.json as one table (rebuilt by consolidate)
    <out>/traces/                         generated and captured traces (the default cache)

``row.json`` is the source of truth and is written atomically (temporary file in the same
folder, then ``os.replace``), so a killed runner leaves every point either finished or not
started; a ``row.json`` damaged afterwards (not a JSON object of table values) counts as not
finished too (a sweep runs the point again), and reading the results reports it.
``results.parquet`` is derived: it is rebuilt from the rows after every sweep and by
:func:`load_results` when it is stale (it records a fingerprint of the rows it holds), so it
can never disagree with them for long; reading a read-only folder builds the table in memory.  One row per point,
configuration columns first (see :meth:`simsched.experiments.pointspec.Point.columns`), then the
run's metrics.  Values that are lists or mappings
(:data:`simsched.engine.record.NESTED_FIELDS`) are JSON objects in ``row.json`` and JSON text
in the Parquet table.

Filtering (``--where``) is a small parser, not ``eval``: ``column OP value`` with OP one of
``= == != < <= > >=`` and ``a|b|c`` alternatives for ``=``/``!=``; values are compared as
numbers when the column is numeric.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.canonical import canonical_json
from simsched.engine.record import nest_fields
from simsched.errors import ConfigError, OutputError, shown, spelled
from simsched.files import (
    atomic_output,
    check_path,
    is_stream,
    parse_json,
    regular_file_kind,
    write_json_atomic,
)
from simsched.params import (
    check_callable,
    check_flag,
    check_frame,
    check_strings,
    column_hint,
    is_utf8,
)

POINTS_DIR = "points"
ROW_FILE = "row.json"
POINT_FILE = "point.json"
RESULTS_FILE = "results.parquet"


def point_dir(out_dir: str | Path, point_id: str) -> Path:
    """Folder of one point inside a sweep's output folder."""
    return Path(out_dir) / POINTS_DIR / point_id


# The name of a temporary file of simsched.files.atomic_output (mkstemp's 8 random letters)
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp(\.[^.]*)?")


def remove_temporaries(out_dir: str | Path, point_id: str) -> list[str]:
    """Remove the temporary files a write cut short left in a point's folder.

    Only the runner that holds the point's claim
    (:class:`~simsched.experiments.claims.PointClaim`) may call this: no one else writes
    there then.  Such files are left by a worker killed mid-write (kill
    -9, or a Dask worker stopped after Ctrl-C: its point runs in a thread, which cannot
    unwind).

    Parameters
    ----------
    out_dir
        The store's folder.
    point_id
        The point.

    Returns
    -------
    list[str]
        The names removed.
    """
    pdir = point_dir(out_dir, point_id)
    gone = []
    with contextlib.suppress(FileNotFoundError):
        for f in pdir.iterdir():
            if _TEMPORARY.fullmatch(f.name) and f.is_file():
                with contextlib.suppress(FileNotFoundError):
                    f.unlink()
                    gone.append(f.name)
    return sorted(gone)


def read_row(out_dir: str | Path, point_id: str) -> dict[str, Any] | None:
    """The finished row of a point, or ``None`` if it has not finished (or is unreadable)."""
    return _load_row(point_dir(out_dir, point_id) / ROW_FILE)[0]


# Integers a Parquet column holds (int64); simsched never writes a larger one.
_INT64 = range(-(2**63), 2**63)


def _load_row(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A ``row.json`` and, when it cannot be used, why not (``None``: it is fine or absent).

    Rows are written atomically, so one that is not a JSON object of table values was
    damaged after the fact; like a point that never finished, it has no row (a sweep runs
    the point again), and :func:`iter_rows` reports it.
    """
    try:
        kind = regular_file_kind(path)  # before reading: a named pipe blocked for good
        if kind is not None:
            return None, f"is {kind}, not a row file"
        row = parse_json(path.read_bytes(), str(path), ConfigError)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read ({exc.strerror})"
    except ConfigError as exc:  # the caller names the file
        return None, str(exc).removeprefix(f"{path}: ")
    if not isinstance(row, dict):
        return None, f"not a JSON object ({type(row).__name__})"
    key = beyond_int64(row)
    if key is not None:
        return None, f"field {key!r} is out of the 64-bit integer range"
    key = not_utf8(row)
    if key is not None:
        return None, f"field {key!r} holds text that is not UTF-8 (a lone surrogate)"
    problem = _row_problem(row, path.parent.name)
    if problem is not None:
        return None, problem
    return row, None


def _row_problem(row: dict[str, Any], folder: str) -> str | None:
    """Why a ``row.json`` of the point folder ``folder`` is damaged, or None.

    Every row names its point and says how it ended, and a simsched record holds numbers
    in the fields figures draw (:data:`_NUMBER_FIELDS`).  A row without them was taken as
    it was: ``{}`` gave a blank row, and one list or text among a column's numbers
    (``"cores": [1, 2]``) turned the whole column into text, which a figure then drew as
    categories without a word.  Other fields may hold anything: a sweep's override can be
    a mapping (``machine.caches.L1.prefetch``), and a custom point function adds its own.
    """
    pid = row.get("point_id")
    if pid != folder:
        said = "no point_id" if pid is None else f"point_id {shown(pid)}"
        return f"{said}, not its folder's name ({folder})"
    if not isinstance(row.get("status"), str):
        return f"status {shown(row.get('status'))} is not text"
    if "record_version" in row:
        for k in _NUMBER_FIELDS:
            v = row.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                # "abc" made the column text: a figure said "not a numeric column"
                return f"field {k!r} is {shown(v)}, not a number"
    return None


#: Fields every simsched record that has them holds as numbers (the axes figures draw).
#: The record's other fields are not checked: lists and mappings are legitimate there.
_NUMBER_FIELDS = ("makespan_cycles", "cores", "sockets", "speedup", "baseline_makespan_cycles")


def beyond_int64(row: Mapping[str, Any]) -> str | None:
    """The first field of ``row`` holding an integer no table column holds (beyond 64
    bits), or None."""
    return next((k for k, v in row.items() if isinstance(v, int) and v not in _INT64), None)


def not_utf8(row: Mapping[str, Any]) -> str | None:
    """The first field of ``row`` whose name or text is not UTF-8 (a lone surrogate, as
    Python reads a byte of a file name that is not UTF-8, or JSON's ``"\\udcff"``), or
    None: the table's text is UTF-8, and pyarrow failed on it with a traceback."""
    return next(
        (k for k, v in row.items() if not is_utf8(k) or (isinstance(v, str) and not is_utf8(v))),
        None,
    )


def merge_row(columns: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """Point columns first; a record field with the same name and another value is kept as
    ``run.<name>`` (e.g. the engine's JSON of the machine beside the machine's label)."""
    row = dict(columns)
    for key, value in record.items():
        if key in columns:
            if value != columns[key]:
                row[f"run.{key}"] = value
        else:
            row[key] = value
    return row


def write_row(
    out_dir: str | Path,
    point_id: str,
    columns: dict[str, Any],
    record: dict[str, Any],
    wall_s: float,
    cost: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Write a point's ``row.json`` (atomically) from its columns and its run's record.

    Parameters
    ----------
    out_dir
        The store's folder.
    point_id
        The point (``<out>/points/<point_id>``).
    columns
        The point's configuration columns (:meth:`simsched.experiments.pointspec.Point.columns`).
    record
        The run's flat record (or an error record).
    wall_s
        Seconds the point took, stored as ``point_wall_s``.
    cost
        Further columns of the point's cost and the host it ran on (``point_cpu_s``,
        ``point_loadavg_1m``, ``host_python_ms``, ``host_gather_ms``), after it.

    Returns
    -------
    dict
        The row as written (nested fields as JSON objects).
    """
    row = nest_fields(merge_row(columns, record))
    row["point_wall_s"] = wall_s
    row.update(cost or {})
    save_row(out_dir, point_id, row)
    return row


def save_row(out_dir: str | Path, point_id: str, row: dict[str, Any]) -> None:
    """Write a finished ``row`` as the point's ``row.json``, atomically, keys in row order."""
    write_json_atomic(point_dir(out_dir, point_id) / ROW_FILE, row, sort_keys=False)


def iter_rows(
    out_dir: str | Path, damaged: list[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """Every finished row under ``out_dir/points``, ordered by point id.

    Parameters
    ----------
    out_dir
        The store's folder.
    damaged
        When given, receives ``(point_id, reason)`` for every ``row.json`` that exists but
        cannot be used (see :func:`_load_row`); such rows are left out.

    Returns
    -------
    list[dict]
        The rows.
    """
    root = Path(out_dir) / POINTS_DIR
    rows = []
    if root.is_dir():
        for sub in sorted(root.iterdir()):
            if not sub.is_dir():  # a stray file beside the point folders is no point
                continue
            row, problem = _load_row(sub / ROW_FILE)
            if row is not None:
                rows.append(row)
            elif problem is not None and damaged is not None:
                damaged.append((sub.name, problem))
    return rows


def rows_to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with Parquet-safe column types.

    Nested values become JSON text; a column mixing numbers and text becomes text, so the
    table always has one type per column.
    """
    flat = [
        {k: (canonical_json(v) if isinstance(v, dict | list) else v) for k, v in r.items()}
        for r in rows
    ]
    df = pd.DataFrame(flat, columns=_column_order(flat))
    for col in df.columns:
        if df[col].dtype == object:
            kinds = {
                type(v)
                for v in df[col]
                if v is not None and not (isinstance(v, float) and pd.isna(v))
            }
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[col] = df[col].map(lambda v: None if v is None else str(v))
            elif kinds <= {int, float} and kinds:
                df[col] = pd.to_numeric(df[col])
        if df[col].hasnans and _whole_numbers(r.get(col) for r in flat):
            # a failed point's missing count made the column float: 1234 cycles exported
            # as 1234.0; a nullable integer column keeps them integers (int64 with nulls
            # in Parquet, empty cells in CSV)
            df[col] = pd.array([r.get(col) for r in flat], dtype="Int64")
    return df


def _column_order(rows: list[dict[str, Any]]) -> list[str]:
    """Every key of ``rows``, each row's keys in that row's order.

    A key first met in a later row goes right after the key before it in that row, so the
    parameters of a workload that only some points run stay among the configuration
    columns (pandas' own order put them after the last column of the first row).
    """
    order: list[str] = []
    seen: set[str] = set()
    for r in rows:
        if r.keys() <= seen:
            continue
        prev = None
        for k in r:
            if k not in seen:
                order.insert(order.index(prev) + 1 if prev is not None else 0, k)
                seen.add(k)
            prev = k
    return order


def _whole_numbers(values: Any) -> bool:
    """Whether the present values (neither None nor NaN) are all ints, and one is."""
    seen = False
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        if type(v) is not int:  # a bool is no count, a float no integer
            return False
        seen = True
    return seen


# Row order of the table: by configuration, numbers inside labels compared as numbers.
SORT_COLUMNS = ("workload", "machine", "scheduler", "seed", "point_id")


def natural_key(value: Any) -> tuple:
    """Sort key of a label with its numbers compared as numbers (``itrs-45nm-2`` before
    ``itrs-45nm-10``)."""
    parts = re.split(r"(\d+)", str(value))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def sort_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Order rows by workload, machine, scheduler, seed (``itrs-45nm-2`` before ``-10``)."""
    cols = [c for c in SORT_COLUMNS if c in df.columns]
    if df.empty or not cols:
        return df
    keys = df[cols].map(natural_key) if hasattr(df, "map") else df[cols].applymap(natural_key)
    order = sorted(range(len(df)), key=lambda i: tuple(keys.iloc[i]))
    return df.iloc[order].reset_index(drop=True)


# Keys of the Parquet file's metadata: the fingerprint of the rows it was built from, and
# the damaged rows left out of it (JSON ``[[point_id, reason], ...]``), so that a current
# table still reports them each time it is read.
_ROWS_KEY = b"simsched.rows"
_DAMAGED_KEY = b"simsched.damaged"


def rows_fingerprint(out_dir: str | Path) -> str:
    """Hash of which rows exist and their versions (point id, size, mtime of ``row.json``).

    Taken *before* the rows are read, so a row that changes while a table is being built
    makes the table's fingerprint differ from the next one: it is never mistaken for
    current.
    """
    import hashlib

    h = hashlib.sha256()
    root = Path(out_dir) / POINTS_DIR
    if root.is_dir():
        for sub in sorted(root.iterdir()):
            try:
                st = os.stat(sub / ROW_FILE)
            except OSError:
                continue
            # the name's bytes: one that is not UTF-8 (a folder put there by hand) failed
            # to encode, with a traceback from every read of the results
            h.update(os.fsencode(sub.name) + f" {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _table_meta(path: Path) -> dict[bytes, bytes]:
    """The metadata of a results table (empty: none, or the file is unreadable)."""
    import pyarrow.parquet as pq

    try:
        return dict(pq.read_schema(path).metadata or {})
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return {}


def _rows_table(out: Path) -> tuple[Any, str]:
    """The rows as a pyarrow table carrying their fingerprint, and the fingerprint."""
    import pyarrow as pa

    fingerprint = rows_fingerprint(out)
    damaged: list[tuple[str, str]] = []
    df = sort_rows(rows_to_frame(iter_rows(out, damaged)))
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = {
        **(table.schema.metadata or {}),
        _ROWS_KEY: fingerprint.encode(),
        _DAMAGED_KEY: json.dumps(damaged).encode(),
    }
    return table.replace_schema_metadata(meta), fingerprint


def consolidate(out_dir: str | Path) -> Path:
    """Rebuild ``<out>/results.parquet`` from the rows; returns its path.

    The table records a fingerprint of the rows it holds (:func:`rows_fingerprint`), so
    :func:`load_results` can tell a current table from a stale one without rebuilding it.
    """
    import pyarrow.parquet as pq

    out = Path(out_dir)
    target = out / RESULTS_FILE
    try:
        kind = regular_file_kind(target)
    except OSError:
        kind = None  # missing: written below (atomic_output names any other fault)
    if kind not in (None, "a folder"):  # atomic_output refuses a folder itself
        # atomic_output writes into a named pipe or a device, as into `-o /dev/stdout`:
        # this table is no output the user named, and the write waited for a reader
        raise OutputError(f"{target}: is {kind}, not the sweep's results table")
    table, _ = _rows_table(out)
    with atomic_output(target) as tmp:
        pq.write_table(table, tmp)
    return target


def _current_rows(out: Path, warn: Callable[[str], None]) -> pd.DataFrame:
    """The rows of a sweep folder as its table holds them, writing nothing unless needed.

    A table whose fingerprint matches the rows is read as it is.  A stale one (or none) is
    rebuilt; when the folder cannot be written (read-only file system, full disk,
    permission) the table is built in memory instead: reading results never needs to write.
    Every damaged row left out of the table is reported through ``warn``; a current table
    whose pages are damaged is a :class:`ConfigError` naming it.
    """
    import io

    import pyarrow.parquet as pq

    target = out / RESULTS_FILE
    meta = _table_meta(target) if target.is_file() else {}
    source: Path | io.BytesIO = target
    if meta.get(_ROWS_KEY) != rows_fingerprint(out).encode():
        try:
            consolidate(out)
            meta = _table_meta(target)
        except OutputError:
            table, _ = _rows_table(out)
            source = io.BytesIO()  # through Parquet, so the column types are those of the file
            pq.write_table(table, source)
            source.seek(0)
            meta = table.schema.metadata
    for point_id, problem in json.loads(meta.get(_DAMAGED_KEY, b"[]")):
        warn(f"{point_dir(out, point_id) / ROW_FILE}: {problem}; the point is left out")
    if isinstance(source, io.BytesIO):
        return pd.read_parquet(source)  # built just now: an error here is a bug
    # A current footer says nothing of the pages behind it, which may still be damaged.
    try:
        return _read_table(source)
    except ConfigError as exc:
        raise ConfigError(f"{exc}; delete it to rebuild it from the points' rows") from None


def _read_table(path: Path) -> pd.DataFrame:
    """A results file (``.parquet``, else CSV) as a DataFrame.

    Raises
    ------
    ConfigError
        The file is empty, truncated, damaged, not of its format, or not UTF-8 text (CSV).
    """
    parquet = path.suffix.lower() == ".parquet"
    what = "Parquet table" if parquet else "CSV table"
    try:
        return _read_parquet(path) if parquet else _read_csv(path)
    except (OSError, ValueError) as exc:
        # pyarrow reports damaged pages (a page header, the compression) as a bare OSError
        # without errno; the file system's errors carry one, or are a subclass.
        if isinstance(exc, OSError) and (exc.errno is not None or type(exc) is not OSError):
            raise ConfigError(f"{path}: cannot read ({exc})") from None
        # ArrowInvalid, EmptyDataError, ParserError, UnicodeDecodeError, damaged pages
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        detail = re.sub(r"^Could not open Parquet input source '.*?': ", "", detail)
        raise ConfigError(f"{path}: not a readable {what} ({detail})") from None


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet results file whose text columns are checked to be UTF-8.

    pyarrow reads a text column's bytes without decoding them: a damaged byte in one
    surfaced only where the text was used (an ArrowException in the CSV writer of `results
    export`).  The check's ValueError names the column, for :func:`_read_table`'s message.
    """
    import pyarrow as pa

    df = pd.read_parquet(path)
    for col in df.columns:
        values = df[col].array
        if isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
            try:
                pa.array(values).validate(full=True)
            except pa.ArrowInvalid as exc:
                raise ValueError(f"column {col!r}: {exc}") from None
    return df


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV results file, a column of whole numbers with empty cells (a failed point's
    counts) as nullable integers: pandas reads it as float, and an export of it wrote
    1234 cycles as 1234.0.  A file of a line break alone is the export of a table without
    a row or a column (a sweep no point of which has finished): an empty table, where an
    empty file (cut short) stays refused."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head and not head.strip() and len(head) < 64:
        return pd.DataFrame()
    df = pd.read_csv(path)
    holed = [c for c in df.columns if df[c].dtype.kind == "f" and df[c].hasnans]
    if holed:
        text = pd.read_csv(path, dtype=str, usecols=holed)
        for col in holed:
            cells = text[col].dropna()
            if len(cells) and cells.str.fullmatch(r"[+-]?\d{1,18}").all():
                df[col] = pd.array([None if pd.isna(v) else int(v) for v in text[col]], "Int64")
    return df


def _ints(df: pd.DataFrame, nullable: bool) -> pd.DataFrame:
    """``df`` with its nullable integer columns kept (``nullable``) or made ``float64``
    (missing: NaN), the type they had before the table kept them integers."""
    if nullable:
        return df
    kinds = {
        c: "float64" if df[c].hasnans else "int64"
        for c in df.columns
        if str(df[c].dtype) == "Int64"
    }
    return df.astype(kinds) if kinds else df


def load_results(
    path: str | os.PathLike,
    *,
    refresh: bool = True,
    warn: Callable[[str], None] | None = None,
    nullable_int: bool = False,
) -> pd.DataFrame:
    """Load a sweep's results as a DataFrame.

    Parameters
    ----------
    path
        A sweep output folder, or a Parquet/CSV file exported from one.
    refresh
        For a folder, bring ``results.parquet`` up to date with the rows first (makes a
        sweep that is still running or was killed visible up to its last finished point).
        A current table is read as it is; a stale one is rebuilt, or, when the folder
        cannot be written, the rows are read in memory (nothing is written).
    warn
        Receives one line per damaged ``row.json`` left out (a point a sweep runs again),
        and one line when rows share their labels (:func:`same_labels`); default:
        :func:`warnings.warn`.
    nullable_int
        Keep a column of whole numbers that some rows lack (a failed point's counts) as
        pandas' nullable ``Int64``, as ``results show`` and ``results export`` write it;
        by default it is ``float64`` with NaN, which arithmetic and figures expect.

    Returns
    -------
    pandas.DataFrame
        One row per finished point.

    Raises
    ------
    ConfigError
        The path is neither a sweep folder nor a results file, that file is damaged, or
        it is another program's table (with none of the :data:`TABLE_COLUMNS`).
    """
    p = check_path(path, "path")
    refresh = check_flag(refresh, "refresh")
    nullable_int = check_flag(nullable_int, "nullable_int")
    check_callable(warn, "warn")  # else it failed only when a warning came
    warn = warn or _warn
    return _ints(_told_same_labels(p, _stored_table(p, refresh, warn), warn), nullable_int)


#: Columns a results table of simsched's has at least one of: a sweep's or a comparison's
#: rows, the one-row table of a run's record (``RunResult.to_parquet``), or a selection of
#: them (``results show --format csv --columns scheduler,cores,speedup``).
TABLE_COLUMNS = (
    "status",
    "point_id",
    "workload",
    "machine",
    "scheduler",
    "seed",
    "makespan_cycles",
    "speedup",
)


def _results_file(path: Path) -> pd.DataFrame:
    """A results file (:func:`_read_table`), refused when it is another program's table:
    a CSV of other columns showed as a blank table of its rows, and was exported and
    plotted as if it were results."""
    df = _read_table(path)
    from simsched.profile.coarsen import TABLE_COLUMNS as PARALLELIZATION_COLUMNS

    if set(PARALLELIZATION_COLUMNS) <= set(df.columns):
        # it has a machine column, so the check below let it through, and its groups were
        # shown as rows of results with only the machine and cores filled in
        raise ConfigError(
            f"{path}: a parallelization table of `simsched coarsen`, not a results table "
            "(`simsched regrain --table` takes it)"
        )
    # no column at all: a sweep none of whose points finished
    if len(df.columns) and not any(c in df.columns for c in TABLE_COLUMNS):
        have = ", ".join(map(str, list(df.columns)[:6])) + (", ..." if len(df.columns) > 6 else "")
        raise ConfigError(
            f"{path}: not a simsched results table (its columns {have}; a run's row has "
            "status, workload, machine, scheduler, ...; `simsched results export` writes one)"
        )
    return df


def _stored_table(p: Path, refresh: bool, warn: Callable[[str], None]) -> pd.DataFrame:
    """The table :func:`load_results` reads at ``p``: a folder's rows (``refresh``) or its
    results file, or a results file given itself."""
    if p.is_dir():
        if (p / POINTS_DIR).is_dir() and refresh:
            return _current_rows(p, warn)
        if (p / RESULTS_FILE).is_file():
            return _results_file(p / RESULTS_FILE)
        raise ConfigError(f"{p}: not a sweep output folder (no {POINTS_DIR}/ or {RESULTS_FILE})")
    if p.suffix.lower() in (".parquet", ".csv") and p.is_file():  # as export writes them
        return _results_file(p)
    if p.exists():
        # "no such" misled for a file that is there: most often the sweep's spec
        hint = (
            " (a sweep spec? give its output folder, which `simsched sweep status` names)"
            if p.suffix.lower() in (".yaml", ".yml")
            else ""
        )
        raise ConfigError(
            f"{p}: not a sweep output folder or a results file (.parquet, .csv){hint}"
        )
    raise ConfigError(f"{p}: no such sweep folder or results file (.parquet, .csv)")


#: The columns that name a run in tables and figures (the spec refuses two points of one
#: sweep with the same values of all four).
LABELS = ("workload", "machine", "scheduler", "seed")


def same_labels(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` whose labels (:data:`LABELS`) another row has too.

    A sweep's spec never makes two such points, but its folder keeps the rows of points
    an edited spec no longer has (a changed parameter, a ``--small`` run beside the full
    one: ``sweep status``'s orphans), and ``compare --out`` into one folder with other
    settings adds runs under the same names.  Tables, means and figures cannot tell such
    rows apart.  Empty when ``df`` lacks one of the label columns.

    Parameters
    ----------
    df
        A results table (:func:`load_results`).

    Returns
    -------
    pandas.DataFrame
        Those rows, in ``df``'s order.
    """
    if not set(LABELS) <= set(df.columns):
        return df.iloc[:0]
    labels = df[list(LABELS)]
    try:
        return df[labels.duplicated(keep=False)]
    except TypeError:  # lists or dicts as labels (a damaged table): compare their text
        return df[labels.astype(str).duplicated(keep=False)]


def _told_same_labels(path: Path, df: pd.DataFrame, warn: Callable[[str], None]) -> pd.DataFrame:
    """``df``, after telling ``warn`` of rows that share their labels (:func:`same_labels`)."""
    from simsched.progress import plural

    dup = same_labels(df)
    if not dup.empty:
        first = (
            " / ".join(str(dup.iloc[0][k]) for k in LABELS[:3]) + f" / seed {dup.iloc[0]['seed']}"
        )
        groups = len(dup[list(LABELS)].astype(str).drop_duplicates())  # lists too
        warn(
            f"{path}: {len(dup)} rows share {plural(groups, 'set')} of labels (workload, machine, "
            f"scheduler, seed; e.g. {first}): tables and figures mix them; rows of points "
            "the spec no longer has are the orphans `sweep status` counts"
        )
    return df


def _where(expr: str) -> str:
    """A filter expression as a message names it: an item of ``wheres`` (Python), or the
    ``--where`` typed."""
    return spelled(f"wheres item {expr!r}", f"--where {expr!r}")


_WHERE_RE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(==|!=|<=|>=|=|<|>)\s*(.*?)\s*$")


def _coerce(series: pd.Series, text: str, where: str) -> Any:
    if pd.api.types.is_bool_dtype(series):
        low = text.lower()
        if low not in ("true", "false", "1", "0"):
            raise ConfigError(f"{_where(where)}: {series.name} is true/false, not {text!r}")
        return low in ("true", "1")
    if pd.api.types.is_numeric_dtype(series):
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{_where(where)}: {series.name} is numeric, not {text!r}") from None
    return text


def parse_where(expr: str, columns: list[str]) -> tuple[str, str, str]:
    """Split ``col OP value``, checking the column exists.

    Raises
    ------
    ConfigError
        The expression does not parse, names an unknown column or gives a value that is
        not UTF-8 text.
    """
    m = _WHERE_RE.match(expr)
    if m is None:
        raise ConfigError(f"{_where(expr)}: expected COLUMN OP VALUE with OP one of = != < <= > >=")
    col, op, value = m.groups()
    if not is_utf8(value):
        # no stored text can hold it (the table is UTF-8), and pyarrow's comparison failed
        # with a UnicodeEncodeError
        raise ConfigError(
            f"{_where(expr)}: {value!r} is not UTF-8 text "
            "(a byte that is not UTF-8 on the command line?)"
        )
    if col not in columns:
        # as --columns words it: the names meant, else the columns there are
        hint = column_hint(col, columns, 12)
        raise ConfigError(f"{_where(expr)}: no column {col!r} ({hint})")
    return col, ("=" if op == "==" else op), value


def filter_frame(
    df: pd.DataFrame, wheres: list[str], warn: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Keep rows matching every ``col OP value`` expression (see module docstring).

    ``warn`` (if given) receives one line for each text value that no row has at all, with
    the nearest ones the column does have: ``scheduler=pfd`` matched nothing in silence,
    and a count of 0 rows read as an answer.

    Raises
    ------
    ConfigError
        ``df`` is not a DataFrame, ``wheres`` not a list of strings, an expression does
        not parse or names an unknown column, or one of the columns it names is
        duplicated in ``df``.
    """
    check_frame(df)
    wheres = check_strings(wheres, "wheres", "COLUMN OP VALUE")
    check_callable(warn, "warn")
    mask = pd.Series(True, index=df.index)
    twice = df.columns[df.columns.duplicated()].unique().tolist()
    for expr in wheres:
        col, op, raw = parse_where(expr, list(df.columns))
        if col in twice:
            # df[col] is then a table, not a column: pandas failed with an AttributeError,
            # or the comparison said a numeric column was text
            raise ConfigError(
                f"{_where(expr)}: the table has {list(df.columns).count(col)} columns named "
                f"{col!r} (duplicated: {', '.join(map(repr, twice))}); give each column a "
                "name of its own"
            )
        series = df[col]
        if op in ("=", "!="):
            values = [_coerce(series, v.strip(), expr) for v in raw.split("|")]
            if warn is not None:
                _warn_absent(series, col, values, expr, warn)
            if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
                hit = series.astype(float).isin(values)
            else:
                hit = (
                    _as_text(series).isin([str(v) for v in values])
                    if not pd.api.types.is_bool_dtype(series)
                    else series.isin(values)
                )
            mask &= hit if op == "=" else ~hit
        else:
            value = _coerce(series, raw, expr)
            if isinstance(value, str):
                raise ConfigError(f"{_where(expr)}: {op} needs a numeric column; {col} is text")
            if value != value:
                # every order comparison with NaN is false: the answer was 0 rows, no word
                raise ConfigError(f"{_where(expr)}: {op} needs a number, not {raw.strip()!r}")
            cmp = {"<": series.lt, "<=": series.le, ">": series.gt, ">=": series.ge}[op]
            mask &= cmp(value).fillna(False)
    return df[mask]


def _as_text(series: pd.Series) -> pd.Series:
    """``series`` as text for ``--where COLUMN=VALUE``; bytes that are not UTF-8 (a binary
    column of a Parquet file) with the undecodable bytes replaced, where ``astype(str)``
    failed."""
    try:
        return series.astype(str)
    except UnicodeDecodeError:
        return series.map(
            lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        )


def _warn_absent(
    series: pd.Series, col: str, values: list[Any], expr: str, warn: Callable[[str], None]
) -> None:
    """Warn of the text values of ``expr`` that no row of ``series`` has."""
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return
    have = sorted({str(v) for v in series.dropna()}, key=natural_key)
    for v in values:
        if str(v) in have:
            continue
        near = difflib.get_close_matches(str(v), have, n=3, cutoff=0.6)
        shown_values = (
            ", ".join(near) if near else ", ".join(have[:8]) + (", ..." if len(have) > 8 else "")
        )
        hint = f"did you mean {shown_values}?" if near else f"its values: {shown_values or 'none'}"
        warn(f"{_where(expr)}: no row has {col} {str(v)!r} ({hint})")


def select_columns(df: pd.DataFrame, columns: list[str] | None) -> pd.DataFrame:
    """Keep ``columns`` in that order (``None`` keeps all).

    Raises
    ------
    ConfigError
        A column does not exist or is named twice.
    """
    if not columns:
        return df
    twice = next((c for i, c in enumerate(columns) if c in columns[:i]), None)
    if twice is not None:
        # the table printed it twice, and a Parquet or JSON export cannot hold two columns
        # of one name
        raise ConfigError(f"{spelled('columns', '--columns')}: {twice!r} is named twice")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        # the first 12 names were followed by "..." even when they were all
        hint = column_hint(missing[0], df.columns, 12)
        raise ConfigError(f"{spelled('columns', '--columns')}: no column {missing[0]!r} ({hint})")
    return df[columns]


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=4)


def export_results(
    path: str | Path,
    target: str | Path,
    wheres: list[str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Write a sweep's results to ``target`` (``.csv`` or ``.parquet``, in any case) atomically.

    A device, FIFO or ``/dev/...`` name without one of those suffixes (``/dev/stdout``)
    receives CSV.

    Raises
    ------
    ConfigError
        The target is not a path or has another suffix, or the source is not a sweep.

    ``warn`` receives the damaged rows left out (see :func:`load_results`).
    """
    target = check_path(target, "target")  # Path(None) failed with a TypeError
    fmt = target.suffix.lower()  # X.CSV is a CSV file, as a figure's X.PNG is a PNG
    if fmt not in (".csv", ".parquet"):
        # -o /dev/stdout (a pipe, a terminal, or redirected to a file) or a FIFO: text.
        if not is_stream(target):
            raise ConfigError(f"{target}: export to a .csv or .parquet file")
        fmt = ".csv"
    df = filter_frame(load_results(path, warn=warn, nullable_int=True), wheres or [], warn)
    with atomic_output(target) as tmp:
        if fmt == ".csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False)
    return target


def load_ok_results(path: str | Path, warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The successful rows of a results store (a copy, for the figure scripts); ``warn``
    as for :func:`load_results`."""
    from simsched.plotting.figures import ok_rows  # matplotlib: not when the store loads

    return ok_rows(load_results(path, warn=warn)).copy()


def study_results(study: str | Path, preferred: str) -> Path:
    """``STUDY/results/PREFERRED`` if that sweep has run, else ``STUDY/results/small``
    (what a study's figure script and notebook read by default)."""
    study = check_path(study, "study")
    if not isinstance(preferred, str) or not preferred.strip() or "/" in preferred:
        # None failed in pathlib; "" gave the results folder itself
        raise ConfigError(f"preferred={shown(preferred)}: expected a sweep's folder name")
    base = study / "results"
    return base / preferred if (base / preferred / "points").is_dir() else base / "small"
