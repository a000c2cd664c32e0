"""Reading a run's output folder: ``result.json``, ``timeline.npz`` and ``config.json``.

A run folder is what ``simsched run --out``, ``run --jobs --out`` or a point of
``compare --out`` writes.  Such folders are copied, edited and sometimes damaged by hand, so
every reader of them (the timeline, allotment and iteration figures,
:mod:`simsched.export`, the study scripts) loads them through this module: each file is
checked once, where it is read (JSON types, array shapes, dtypes and index ranges), and a
damaged one ends in a :class:`~simsched.errors.ConfigError` that names the file and the
field instead of an exception deep inside a figure or an export.  Nothing is unpickled.
"""

from __future__ import annotations

import json
import reprlib
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from simsched.errors import ConfigError
from simsched.files import check_path, parse_json, read_user_text, regular_file_kind

RESULT_FILE = "result.json"
TIMELINE_FILE = "timeline.npz"
CONFIG_FILE = "config.json"
POINT_FILE = "point.json"

#: Per-strand arrays of ``timeline.npz``: always there, and there in newer runs.
STRAND_ARRAYS = ("core", "start", "end", "frame")

#: The per-strand arrays that may hold -1 for a strand a sampled run did not replay to
#: its end (docs/engine.md): its ``end`` is -1, and its ``core`` and ``start`` too when it
#: never started (the iterations the run extrapolated).
NOT_REPLAYED = ("core", "start", "end")


def not_replayed(arrays: Any) -> np.ndarray:
    """Which strands of a timeline a sampled run did not replay to their end (``end`` -1:
    the iterations it extrapolated, and a strand still running when it stopped)."""
    core = np.asarray(arrays["core"])
    end = np.asarray(arrays["end"]) if "end" in arrays else None
    if end is None or end.shape != core.shape:
        return np.zeros(core.shape, bool)  # not a timeline's shape: nothing to leave out
    return end == -1


def replayed_only(arrays: Any) -> dict[str, Any]:
    """``arrays`` without the strands that were not replayed (:func:`not_replayed`), what
    a drawing shows; unchanged when its per-strand arrays are not of one length (the
    caller's checks name that)."""
    core = np.asarray(arrays["core"])
    per_strand = [k for k in (*STRAND_ARRAYS, *OPTIONAL_STRAND_ARRAYS) if k in arrays]
    if core.ndim != 1 or any(np.shape(arrays[k]) != core.shape for k in per_strand):
        return dict(arrays)
    keep = ~not_replayed(arrays)
    return {k: np.asarray(v)[keep] if k in per_strand else v for k, v in arrays.items()}


OPTIONAL_STRAND_ARRAYS = (
    "job",
    "strand",
    "private_misses",
    "llc_misses",
    "dram_local",
    "dram_remote",
)


def run_files(result: Path, label: str = "the run's") -> dict[str, Path]:
    """The files a command reading the run ``result`` (a run folder or its ``result.json``)
    may read, named for messages: what an output must not replace
    (:func:`simsched.files.check_not_input`)."""
    # Given its result.json, a reader still takes the config and timeline beside it.
    folder, record = (result, result / RESULT_FILE) if result.is_dir() else (result.parent, result)
    return {
        f"{label} record": record,
        f"{label} config": folder / CONFIG_FILE,
        f"{label} timeline": folder / TIMELINE_FILE,
    }


def timeline_inputs(result: Path, trace: Path | None) -> dict[str, Path | None]:
    """:func:`run_files` and the traces a timeline's reader opens: ``trace`` when given,
    else those the run's config names (what ``export timeline -o`` must not replace)."""
    if trace is not None:
        return {**run_files(result), "the trace": trace}
    paths = run_trace_paths(result if result.is_dir() else result.parent)
    if len(paths) == 1:
        return {**run_files(result), "the run's trace": paths[0]}
    return {**run_files(result), **{f"the trace of job {j}": p for j, p in enumerate(paths)}}


# Counts of a record that its readers draw or check against, with their least value.
_RECORD_COUNTS = {"cores": 1, "sockets": 1, "makespan_cycles": 0}

# Records keep counts and cycles as signed 64-bit integers.
_MAX_COUNT = 2**63 - 1


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path``.

    Raises
    ------
    ConfigError
        Missing, unreadable, not UTF-8, not JSON, or nested too deeply to parse.
    """
    p = Path(path)
    text = read_user_text(p, "JSON")  # its errors name what is missing or not text
    return parse_json(text.encode("utf-8"), str(p), ConfigError)


def run_path(path: Any) -> Path:
    """``path``, a run folder or its ``result.json``, as a :class:`Path`.

    Raises
    ------
    ConfigError
        An empty path (``Path("")`` is the current folder: the error then named a
        ``result.json`` nobody gave), or not a path at all.
    """
    if isinstance(path, str) and not path:
        raise ConfigError(
            f"an empty path, expected a run folder (`simsched run --out`) or its {RESULT_FILE}"
        )
    return check_path(path, "path")


def result_file(path: str | Path) -> Path:
    """``path/result.json`` for a run folder, else ``path`` itself."""
    p = run_path(path)
    return p / RESULT_FILE if p.is_dir() else p


def read_record(path: str | Path) -> dict[str, Any]:
    """The result record of a run folder (or of its ``result.json``), its types checked.

    Parameters
    ----------
    path
        A run folder or the ``result.json`` in it.

    Returns
    -------
    dict
        The record.  Its ``jobs``, ``allotment``, ``machine_config``, ``cores`` and
        ``sockets`` (from 1), ``makespan_cycles`` and each job's ``finish`` (from 0), when
        present, have the types and ranges :mod:`simsched.api` writes (``machine_config``
        may be JSON text, as in a results table; it is returned parsed).

    Raises
    ------
    ConfigError
        An empty path, no such file, a sweep's output folder or another folder without
        a record, not JSON, not a JSON object, an object without
        ``status`` (no run's record: a ``config.json``, say), or one of those fields of
        another type or out of its range.
    """
    p = result_file(path)
    if not p.exists():
        raise _no_record(run_path(path), p)
    try:
        rec = read_json(p)
    except ConfigError:
        if p.suffix.lower() == ".json" or regular_file_kind(p) is not None:
            raise  # a named pipe or a device says so: it was never read
        # the timeline.npz or config beside it, a trace: "byte 14 is not UTF-8 text"
        raise ConfigError(
            f"{p}: not a run's result record (not JSON text); give the run folder "
            f"(`simsched run --out`) or its {RESULT_FILE}"
        ) from None
    if not isinstance(rec, dict):
        raise ConfigError(f"{p}: not a result record (a JSON object, not {type(rec).__name__})")
    if "status" not in rec:
        # Every record has it, a failed run's too (docs/results.md); without it, a config.json
        # or an emptied record read as a run that "failed (?)".
        beside = p.parent / RESULT_FILE
        where = (
            f"the run's record is {beside}"
            if p.name != RESULT_FILE and beside.is_file()
            else "`simsched run --out` writes one"
        )
        raise ConfigError(f"{p}: not a run's result record (no 'status' field; {where})")
    if isinstance(rec.get("machine_config"), str):
        try:
            rec["machine_config"] = json.loads(rec["machine_config"])
        except (ValueError, RecursionError):
            raise ConfigError(f"{p}: field 'machine_config' is not JSON") from None
    if rec.get("machine_config") is not None:
        mc = rec["machine_config"]
        ghz = mc.get("clock_ghz") if isinstance(mc, dict) else None
        if not isinstance(mc, dict) or not (ghz is None or _positive(ghz)):
            raise ConfigError(f"{p}: field 'machine_config' is not a machine (clock_ghz > 0)")
    check_record_fields(p, rec)
    return rec


def _no_record(given: Path, p: Path) -> ConfigError:
    """What is wrong with ``given``, a path whose record ``p`` does not exist: a sweep's
    output folder (its runs are its points), a folder without a record, or no such path."""
    if given.is_dir():
        if (given / "points").is_dir():
            # a sweep's (or a saved comparison's) folder: its runs are its points (two of
            # the three figures said "sw/result.json: no such file")
            return ConfigError(
                f"{given}: a sweep's output folder, not one run's: give one of its points, "
                f"{given / 'points'}/<id> (`simsched results show {given}` lists them by "
                "point_id)"
            )
        return ConfigError(f"{given}: no {RESULT_FILE} there (write one with `simsched run --out`)")
    what = "file" if p.suffix == ".json" else "run folder"
    return ConfigError(f"{p}: no such {what} (a `simsched run --out` folder, or its {RESULT_FILE})")


def check_record_fields(where: str | Path, rec: dict[str, Any]) -> None:
    """Refuse a record whose ``jobs``, ``allotment``, counts (``cores``, ``sockets``,
    ``makespan_cycles``) or jobs' ``finish`` are not of the types and ranges
    :mod:`simsched.api` writes, in one line naming ``where`` (a file, or the argument of a
    figure function given a record made or changed in Python).

    Raises
    ------
    ConfigError
        The first such field.
    """
    if "jobs" in rec:
        jobs = rec["jobs"]
        if not isinstance(jobs, list) or not all(
            isinstance(j, dict) and isinstance(j.get("name"), str) for j in jobs
        ):
            raise ConfigError(f"{where}: field 'jobs' is not a list of jobs with names")
        for j in jobs:
            _check_count(where, j, "finish", 0, f" of job {j['name']!r}")
    for key, least in _RECORD_COUNTS.items():
        _check_count(where, rec, key, least)
    if "allotment" in rec:
        _check_allotment(where, rec["allotment"], len(rec.get("jobs") or []))


def check_finished(p: Path, rec: dict[str, Any], lost: str, what: str = "the run") -> None:
    """Refuse the record of a run that did not end well, in one line naming ``p``.

    Parameters
    ----------
    p
        The record's file, for the message.
    rec
        The record (:func:`read_record`).
    lost
        What an interrupted run has none of (``"no timeline to draw"``).
    what
        How the message names the run.

    Raises
    ------
    ConfigError
        The run failed (with the first line of the record's own error message), was
        interrupted, or has a ``status`` that is none of ``ok``, ``error``, ``interrupted``.
    """
    status = rec.get("status")
    if status == "ok":
        return
    if status == "interrupted":
        raise ConfigError(
            f"{p}: {what} was interrupted (Ctrl-C or SIGTERM) before it ended: {lost}"
        )
    if status != "error":
        raise ConfigError(
            f"{p}: field 'status' is {reprlib.repr(status)}, not 'ok', 'error' or 'interrupted'"
        )
    error = rec.get("error")
    lines = error.strip().splitlines() if isinstance(error, str) else []
    raise ConfigError(
        f"{p}: {what} failed ({lines[0] if lines else 'its record gives no error message'})"
    )


def is_int(x: Any) -> TypeGuard[int]:
    """Whether ``x`` is a JSON integer (a Python ``int`` that is not a ``bool``)."""
    return isinstance(x, int) and not isinstance(x, bool)


def _check_count(p: str | Path, fields: dict[str, Any], key: str, least: int, of: str = "") -> None:
    """``fields[key]``, when there, is an integer from ``least`` (a string or float there
    failed inside a figure, and a negative count drew nonsense)."""
    v = fields.get(key, least)
    if not (is_int(v) and least <= v <= _MAX_COUNT):
        raise ConfigError(
            f"{p}: field {key!r}{of} is not an integer from {least}, but {reprlib.repr(v)}"
        )


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and 0 < x < float("inf")


def _check_allotment(p: str | Path, allot: Any, n_jobs: int) -> None:
    """The allotment series: ``cycles`` (n), ``cores`` and ``desire`` (n x jobs) numbers."""
    bad = ConfigError(
        f"{p}: field 'allotment' is not an allotment series (cycles, and cores and desire "
        f"with one number per job of {n_jobs} at every cycle)"
    )
    if not isinstance(allot, dict) or not {"cycles", "cores"} <= allot.keys():
        raise bad
    try:
        cycles = _numbers(allot["cycles"])
        cores = _numbers(allot["cores"])
        desire = _numbers(allot["desire"]) if "desire" in allot else np.zeros(cores.shape)
    except (TypeError, ValueError):  # ragged lists, text
        raise bad from None
    if cycles.ndim != 1:
        raise bad
    shapes = (cores.shape, desire.shape)
    if any(s != (len(cycles), n_jobs) for s in shapes):
        if len(cycles) or any(np.prod(s) for s in shapes):
            raise bad
    # A desire of -1 is one not reported.
    for a, least in ((cycles, 0), (cores, 0), (desire, -1)):
        if not np.all(np.isfinite(a)) or np.any(a < least):
            raise bad


def _numbers(values: Any) -> np.ndarray:
    """``values`` as a float array; text, booleans and nulls raise ``TypeError`` (numpy
    would read "1" as a number)."""
    a = np.asarray(values)
    if a.size and a.dtype.kind not in "iuf":
        raise TypeError(a.dtype)
    return a.astype(float)


def read_timeline(path: str | Path, record: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The arrays of a ``timeline.npz``, checked to describe one run's strands.

    Parameters
    ----------
    path
        The ``timeline.npz`` file.
    record
        The run's record: with one, a job set's ``job`` numbers are checked against its
        ``jobs``, ``socket_of_core`` against its ``cores`` and ``sockets``, and strands
        not replayed (``end`` -1) are taken only from a run whose record says ``sampled``.

    Returns
    -------
    dict[str, numpy.ndarray]
        The arrays by name: the per-strand ``core``, ``start``, ``end``, ``frame`` (and
        ``job``, ``strand`` and memory counters when stored), all 1-D integer arrays of
        one length; ``socket_of_core`` (one entry per core); ``makespan`` when stored.

    Raises
    ------
    ConfigError
        Not a readable ``.npz`` archive, or an array missing, of another shape or dtype,
        or with a value out of range (a core or socket that does not exist, an end before
        its start).
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no timeline next to the result")
    kind = regular_file_kind(p)  # before opening: np.load of a named pipe waited for good
    if kind is not None:
        raise ConfigError(f"{p}: is {kind}, expected a timeline archive (.npz)")
    try:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except AttributeError:  # a plain .npy: np.load returned an array, not an archive
        raise ConfigError(f"{p}: not a timeline archive (.npz)") from None
    except EOFError:  # numpy's answer to an empty file (click would call it "aborted")
        raise ConfigError(f"{p}: cannot read the timeline (empty file)") from None
    except (
        OSError,
        ValueError,
        KeyError,
        zipfile.BadZipFile,
        zlib.error,
        NotImplementedError,  # zipfile's answer to a damaged compression method
    ) as exc:
        # Bytes that are neither .npz nor .npy make numpy try (and refuse) to unpickle them.
        detail = "not an .npz archive" if "pickle" in str(exc) else str(exc)
        raise ConfigError(f"{p}: cannot read the timeline ({detail})") from None
    return check_timeline(arrays, record, p)


def check_timeline(
    given: Mapping[str, Any], record: dict[str, Any] | None = None, where: str | Path = "arrays"
) -> dict[str, np.ndarray]:
    """The arrays of a timeline as numpy arrays, checked to describe one run's strands:
    what :func:`read_timeline` checks in a ``timeline.npz``, and the timeline figure in
    arrays given from Python.

    Parameters
    ----------
    given
        The arrays by name (numpy arrays or lists).
    record
        The run's record, or None: see :func:`read_timeline`.
    where
        What the messages name: the file, or the argument.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``given``, each as a numpy array.

    Raises
    ------
    ConfigError
        An array missing, of another shape or dtype, or with a value out of range.
    """

    def fail(name: str, what: str) -> ConfigError:
        return ConfigError(f"{where}: array {name!r} {what}")

    arrays: dict[str, np.ndarray] = {}
    for k, v in given.items():
        try:
            arrays[k] = np.asarray(v)
        except (TypeError, ValueError):  # a ragged list
            raise fail(k, "is not an array of integers") from None
    for k in (*STRAND_ARRAYS, "socket_of_core"):
        if k not in arrays:
            raise fail(k, "is missing")
    for k, a in arrays.items():
        if a.ndim != 1:
            raise fail(k, f"has shape {a.shape}, not one dimension")
        if a.dtype.kind not in "iu":
            raise fail(k, f"holds {a.dtype}, not integers")
    n = len(arrays["core"])
    for k in (*STRAND_ARRAYS, *OPTIONAL_STRAND_ARRAYS):
        if k in arrays and len(arrays[k]) != n:
            raise fail(k, f"has {len(arrays[k])} entries, not one per strand ({n})")
    # A sampled run's strands of the iterations it extrapolated were never replayed: they
    # have core, start and end -1 (and only those may; NOT_REPLAYED). Only a sampled run
    # has them: another run's record says it was not (a timeline read alone may be either).
    skipped = not_replayed(arrays)
    if record is not None and record.get("sampled") is not True and skipped.any():
        raise fail("end", "has a negative entry, but the run was not sampled")
    if np.any(skipped & ((arrays["core"] == -1) != (arrays["start"] == -1))):
        # never started (both -1) or stopped while running (both set): nothing between
        raise fail("core", "and 'start' disagree on a strand that was not replayed")
    for k in (*STRAND_ARRAYS, *OPTIONAL_STRAND_ARRAYS):
        if k in arrays and n:
            bad = arrays[k] < 0
            if k in NOT_REPLAYED:
                bad &= ~(skipped & (arrays[k] == -1))  # what a sampled run did not replay
            if bad.any():
                raise fail(k, "has a negative entry")
    if n == 0:
        raise fail("core", "is empty (no strands)")
    sock = arrays["socket_of_core"]
    if not len(sock) or int(sock.min()) < 0:
        raise fail("socket_of_core", "is empty or has a negative socket")
    # Only the record knows the machine: without this check a socket that does not exist,
    # or a core too many, was drawn and exported as if it did.
    cores, sockets = (record.get("cores"), record.get("sockets")) if record else (None, None)
    if is_int(cores) and len(sock) != cores:
        raise fail("socket_of_core", f"has {len(sock)} entries, not one per core ({cores})")
    if is_int(sockets) and int(sock.max()) >= sockets:
        raise fail("socket_of_core", f"names socket {int(sock.max())} of {sockets} sockets")
    if int(arrays["core"].max()) >= len(sock):
        raise fail("core", f"names core {int(arrays['core'].max())} of {len(sock)} cores")
    if np.any((arrays["end"] < arrays["start"]) & ~skipped):
        raise fail("end", "has a strand that ends before it starts")
    if "makespan" in arrays and not len(arrays["makespan"]):
        raise fail("makespan", "is empty")
    if "makespan" in arrays and np.any((arrays["end"] > arrays["makespan"][0]) & ~skipped):
        # the figure's axis ends at the makespan: such strands were drawn cut off
        raise fail("end", f"has a strand that ends after the makespan ({arrays['makespan'][0]})")
    job = arrays.get("job", np.zeros(n, np.int64))
    # only the record knows the jobs (a job set's arrays given alone have several)
    n_jobs = len(record["jobs"]) if record and isinstance(record.get("jobs"), list) else 1
    if record is not None and int(job.max()) >= n_jobs:
        raise fail("job", f"names job {int(job.max())} of {n_jobs}")
    if "strand" in arrays:
        for j in np.unique(job).tolist():
            mine = np.sort(arrays["strand"][job == j])
            if not np.array_equal(mine, np.arange(len(mine))):
                raise fail("strand", f"does not number job {j}'s strands 0, 1, 2, ...")
    return arrays


def check_frames(path: str | Path, frame: np.ndarray, n_frames: int, trace: str | Path) -> None:
    """Check that a timeline's ``frame`` numbers are frames of the run's trace.

    Raises
    ------
    ConfigError
        A frame number is not below ``n_frames`` (the timeline in ``path`` is damaged).
    """
    if len(frame) and int(frame.max()) >= n_frames:
        raise ConfigError(
            f"{path}: array 'frame' names frame {int(frame.max())}, but the run's trace "
            f"{trace} has {n_frames} frames"
        )


def run_trace_paths(folder: str | Path, n_jobs: int = 1) -> list[Path | None]:
    """The run's trace per job, as its ``config.json`` (or ``point.json``) names it.

    Either file may be missing or unreadable (the trace is then unknown: ``None``), but a
    readable one that names a trace by something other than a path is damaged.

    Raises
    ------
    ConfigError
        ``config.json`` gives a trace that is not a path (e.g. a number).
    """
    folder = Path(folder)
    paths: list[Any] = [None] * n_jobs
    where = folder / CONFIG_FILE
    # read_user_text: a named pipe in a file's place blocked the figure for ever
    try:
        paths = _config_traces(json.loads(read_user_text(where, "JSON")))
    except (ConfigError, ValueError, KeyError, TypeError, RecursionError):
        where = folder / POINT_FILE
        try:
            point = json.loads(read_user_text(where, "JSON"))
            paths = [point["workload"]["path"]]
        except (ConfigError, ValueError, KeyError, TypeError, RecursionError):
            pass
    if not all(p is None or isinstance(p, str) for p in paths):
        raise ConfigError(f"{where}: field 'trace' is not a path")
    return [Path(p) if p is not None and Path(p).is_file() else None for p in paths]


def _config_traces(cfg: Any) -> list[Any]:
    """The traces a run's ``config.json`` names, one per job (``KeyError`` or
    ``TypeError`` when it names none)."""
    return [j["trace"] for j in cfg["jobs"]] if "jobs" in cfg else [cfg["trace"]]


def why_no_trace(folder: str | Path) -> str:
    """Why :func:`run_trace_paths` found no trace for the run in ``folder``, for a note.

    Returns
    -------
    str
        ``config.json`` missing, not readable JSON, or naming a trace that is not a file.
    """
    where = Path(folder) / CONFIG_FILE
    if not where.exists():
        return f"{where} is missing"
    try:
        cfg = json.loads(read_user_text(where, "JSON"))
    except (ConfigError, ValueError, RecursionError):
        return f"{where} is not readable JSON"
    if not isinstance(cfg, dict):
        return f"{where} is not a run's configuration"
    try:
        names = _config_traces(cfg)
    except (KeyError, TypeError):
        return f"{where} names no trace"
    for name in names:
        if isinstance(name, str) and not Path(name).is_file():
            return f"{where} names the trace {name}, which is not a file"
    return f"{where} names no trace"
