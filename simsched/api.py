"""Public Python API of the replay: :func:`run` and :func:`compare` (docs/architecture.md §4.5).

``simsched run`` and ``simsched compare`` are thin layers over these two functions; the
sweep runner calls :func:`run` for every point.  A run resolves the machine, opens the
trace, builds the memory model for the machine's geometry (with the engine's window loop
compiled into it), replays the trace under the scheduler, and returns a
:class:`RunResult` whose ``record`` is the flat result record of ``docs/results.md``.

``speedup`` divides the makespan of the same trace on a one-core version of the same
machine, the sequential execution of [PDF07] §5.1, which :mod:`simsched.baseline` computes
once and caches on disk.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched.baseline import (  # noqa: F401
    BASELINE_VERSION,
    baseline_estimate,
    baseline_makespan,
    baseline_path,
    speedup_interval,
)
from simsched.engine.outcome import EngineResult
from simsched.engine.record import (
    RECORD_VERSION,
    dumps,
    metrics,
    nest_fields,
    scheduler_fields,
    write_npz_atomic,
    write_parquet_atomic,
)
from simsched.engine.replay import DEFAULT_WINDOW, MAX_WINDOW, check_arrivals
from simsched.engine.sampled import (  # noqa: F401 - the sampling options, kept importable here
    DEFAULT_SAMPLE_PRECISION,
    MAX_SAMPLES,
    MIN_SAMPLES,
    PRECISION_UNSET,
    Unset,
    check_sampleable,
    check_sampled_iterations,
    check_sampling,
    make_sampler,
    sample_fields,
    stop_hook,
    trace_iterations,
)
from simsched.errors import (
    ConfigError,
    SimschedError,
    Terminated,
    TraceFormatError,
    described,
    interrupt_in,
    shown,
    spelled,
)
from simsched.files import check_path, write_json_atomic
from simsched.identity import version

# Defined with the machine model; kept importable from here.
from simsched.machine.loader import machine_config, one_core_machine  # noqa: F401
from simsched.params import (
    MAX_QUANTUM,
    check_callable,
    check_flag,
    check_int,
    check_mapping,
    check_recordable,
    check_seed,
)
from simsched.plugins import note_plugins
from simsched.trace.reader import as_trace

if TYPE_CHECKING:
    from simsched.machine import Machine
    from simsched.trace import Trace


def _code_identity() -> str:
    from simsched.identity import results_identity

    return results_identity()


def record_base(window: int, **fields: Any) -> dict[str, Any]:
    """The fields a run's record (and a failed run's) starts with: the record's version,
    the window, simsched's version and code identity, and ``fields``.

    Parameters
    ----------
    window
        The run's window (cycles).
    **fields
        Further fields, known before the run starts (``scheduler``, ``kind``...).

    Returns
    -------
    dict
        A new record.
    """
    return {
        "record_version": RECORD_VERSION,
        "window": window,
        "simsched_version": version(),
        "code_identity": _code_identity(),
        **fields,
    }


def machine_fields(m: Machine) -> dict[str, Any]:
    """A record's ``machine``, ``cores`` and ``sockets`` for the machine ``m``."""
    return {"machine": m.name, "cores": m.cores, "sockets": m.sockets}


def run_config(
    trace: str | None,
    machine: str | None,
    overrides: dict[str, Any],
    scheduler: str,
    params: dict[str, Any],
    seed: int,
    window: int,
    iterations: str | None,
    sample_iterations: int | None,
    sample_precision: float | None,
) -> dict[str, Any]:
    """A single run's ``config.json`` as given, before the machine and the scheduler's
    parameters are resolved (:func:`run` adds them; a sweep point that fails before its
    run writes it too).

    Parameters
    ----------
    trace
        The trace as named (None: not made yet).
    machine
        The preset's name (None: a machine given resolved).
    overrides, scheduler, params, seed, window, iterations, sample_iterations
        As :func:`run` takes them, checked.
    sample_precision
        The precision in force when sampling (recorded only with ``sample_iterations``).

    Returns
    -------
    dict
        The configuration.
    """
    return {
        "trace": trace,
        "machine": machine,
        "overrides": overrides,
        "scheduler": scheduler,
        "params": params,
        "seed": seed,
        "window": window,
        "iterations": iterations,
        "sample_iterations": sample_iterations,
        "sample_precision": sample_precision if sample_iterations else None,
    }


@dataclass
class RunResult:
    """The outcome of one run.

    Attributes
    ----------
    record
        Flat JSON-able result record (fields in ``docs/results.md``).
    engine_result
        Raw per-strand and per-core output of the engine (None when the run failed).
    mem_stats
        ``MemorySystem.stats()`` after the replay (per level, core, socket, node).
    engine
        Engine statistics (events, kernel time, median bookkeeping cost per strand);
        timing-dependent, hence not in the record.
    frames
        Frame of every strand (for timelines).
    sockets_of_core
        Socket of every core.
    """

    record: dict[str, Any]
    engine_result: EngineResult | None = None
    mem_stats: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)
    frames: np.ndarray | None = None
    sockets_of_core: np.ndarray | None = None

    @property
    def timeline(self) -> list[np.ndarray]:
        """Per core, the strands it ran as a structured array sorted by start.

        Fields ``start``, ``end`` (cycles), ``strand`` and ``frame``.
        """
        r = self.engine_result
        if r is None:
            return []
        dt = np.dtype([("start", "i8"), ("end", "i8"), ("strand", "i8"), ("frame", "i8")])
        out = []
        ncores = len(r.busy_cycles)
        order = np.lexsort((r.strand_start, r.strand_core))
        cores = r.strand_core[order]
        bounds = np.searchsorted(cores, np.arange(ncores + 1))
        for c in range(ncores):
            idx = order[bounds[c] : bounds[c + 1]]
            a = np.empty(len(idx), dtype=dt)
            a["start"] = r.strand_start[idx]
            a["end"] = r.strand_end[idx]
            a["strand"] = idx
            a["frame"] = self.frames[idx] if self.frames is not None else -1
            out.append(a)
        return out

    def to_parquet(self, path: str | os.PathLike) -> Path:
        """Write the record as a one-row Parquet file (atomically); returns the path."""
        out = check_path(path, "path")  # None or a number raised TypeError
        write_parquet_atomic(out, [self.record])
        return out

    def timeline_arrays(self) -> dict[str, np.ndarray]:
        """Arrays stored in ``timeline.npz``: per strand core, start, end, frame and the
        memory counters (:data:`simsched.engine.outcome.STRAND_MEM_FIELDS`)."""
        r = self.engine_result
        if r is None:
            return {}
        return {
            "core": r.strand_core,
            "start": r.strand_start,
            "end": r.strand_end,
            "frame": self.frames if self.frames is not None else np.full_like(r.strand_core, -1),
            "socket_of_core": (
                self.sockets_of_core
                if self.sockets_of_core is not None
                else np.zeros(0, dtype=np.int64)
            ),
            "makespan": np.array([r.makespan], dtype=np.int64),
            **r.strand_mem,
        }


def _trace_name(trace: Any) -> str:
    """The trace as the caller named it (an open Trace by its path), for messages and
    ``config.json``."""
    return str(trace.path) if hasattr(trace, "header") else str(trace)


def _with_iterations(t: Trace, mode: str | None) -> Trace:
    """``t`` with its iterations relabelled as ``--iterations mode`` says (None: as is)."""
    from simsched.trace.iterations import with_iterations

    return with_iterations(t, mode)


def parse_scheduler_names(schedulers: Sequence[str] | str) -> list[str]:
    """Scheduler names from a list or a comma-separated string: none empty, none twice.

    Raises
    ------
    ConfigError
        Not a string or a list of names (a mapping is refused: its values were ignored),
        an empty name (``"ws,"``) or a name given twice (``"ws,ws"``).
    """
    unordered = isinstance(schedulers, Set | bytes)
    if not isinstance(schedulers, str | Iterable) or isinstance(schedulers, Mapping) or unordered:
        # a mapping's keys were taken as the names and its values dropped without a word;
        # a set's order (the results') was the hash seed's, bytes gave names such as '119'
        hint = "; scheduler parameters go in params=" if isinstance(schedulers, Mapping) else ""
        raise ConfigError(
            f"schedulers={shown(schedulers)}: expected scheduler names (a list or a string "
            f"such as 'ws,pdf'){hint}"
        )
    items = schedulers.split(",") if isinstance(schedulers, str) else list(schedulers)
    names = [str(s).strip() for s in items]
    # compare -s passes its text here: tell it in the option's words
    given = spelled(f"schedulers={shown(schedulers)}", f"--schedulers {shown(schedulers)}")
    if not names:
        raise ConfigError(f"{given}: no scheduler named; give e.g. ['ws', 'pdf']")
    if any(not n for n in names):
        raise ConfigError(f"{given}: an empty name (a stray comma?); give e.g. ws,pdf")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ConfigError(f"{given}: {n} is given twice")
        seen.add(n)
    return names


def _machine(machine: str | Path | dict | Machine, overrides: dict[str, Any] | None) -> Machine:
    """The machine, refused up front if its simulated caches cannot fit in this host."""
    from simsched.machine import load_machine
    from simsched.machine.resources import check_fits

    m = load_machine(machine, overrides)
    check_fits(m, machine if isinstance(machine, str) else None)
    return m


def _run(runner: Any, label: str, progress: bool) -> Any:
    """``runner.run()`` (an Engine or a Replay), reporting its progress on stderr when asked
    (a bar at a terminal, plain periodic lines elsewhere: :mod:`simsched.progress`)."""
    if not progress:
        return runner.run()
    from simsched.progress import Progress

    # the cycle and strands done move when the references done do not (a run whose
    # cores only retry): the lines show that, and whether it moves at all
    with Progress(f"simulating {label}", detail=runner.position) as bar:
        runner.progress = bar
        return runner.run()


def _options(seed: Any, window: Any) -> tuple[int | None, int]:
    """The seed (None: not given) and the window of a replay, refused the same way by
    :func:`run` and :func:`run_jobs` (one line naming the value)."""
    s = None if seed is None else check_seed(seed)
    win = DEFAULT_WINDOW if window is None else check_int("window", window, 0, MAX_WINDOW)
    return s, win


def _out_dir(out_dir: Any) -> Path | None:
    """The ``out_dir`` of :func:`run` and :func:`run_jobs` (None: write nothing)."""
    return None if out_dir is None else check_path(out_dir, "out_dir")


def _replay(
    m: Machine,
    specs: list[Any],
    controller: Any,
    seed: int,
    window: int,
    progress: bool,
    label: str,
    stop_when: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """The one replay pipeline: ``specs`` (:class:`~simsched.engine.JobSpec`) on ``m``
    under ``controller``; returns the :class:`~simsched.engine.ReplayResult` and the
    memory statistics.  :func:`run` is this with one job under ``all`` (and, when it
    samples, a ``stop_when`` of :class:`~simsched.engine.Replay`)."""
    from simsched.engine import Replay
    from simsched.engine.replay import plan_buffers

    plan_buffers(m, specs)  # refuse buffers that cannot fit before the model compiles
    # the replay builds the memory model itself, once its decoders have started on the
    # chunks the first strands need (loading the model's kernels takes a while)
    rep = Replay(
        m,
        specs,
        controller=controller,
        seed=seed,
        window=window,
        stop_when=stop_when,
    )
    res = _run(rep, label, progress)
    return res, rep.memory.stats()


def run(
    trace: Any,
    machine: Any,
    scheduler: str = "ws",
    params: dict[str, Any] | None = None,
    seed: int = 0,
    *,
    overrides: dict[str, Any] | None = None,
    out_dir: str | os.PathLike | None = None,
    progress: bool = False,
    window: int | None = None,
    speedup: bool = True,
    iterations: str | None = None,
    sample_iterations: int | None = None,
    sample_precision: float | None | Unset = PRECISION_UNSET,
) -> RunResult:
    """Replay a trace on a machine under a scheduler and return the result.

    Parameters
    ----------
    trace
        Path of a trace file or an open :class:`simsched.trace.Trace`.
    machine
        Preset name, YAML path, dict or :class:`simsched.machine.Machine`.
    scheduler
        Registered scheduler name or alias (``simsched.schedulers.REGISTRY``).
    params
        Scheduler parameters (e.g. ``{"spawn_policy": "parent-first"}`` for ``ws``).
    seed
        Seed of the scheduler's random generator.
    overrides
        Dotted machine overrides, e.g. ``{"caches.L2.size": "8MB"}``.
    out_dir
        When given, ``config.json`` (resolved config), ``result.json`` (record) and
        ``timeline.npz`` are written there atomically; a failed run still writes
        ``result.json`` with ``"status": "error"`` (``"interrupted"`` after Ctrl-C) and
        the message, then raises, removing an earlier run's ``config.json`` and
        ``timeline.npz`` it did not replace.
    progress
        Report progress on stderr (a bar at a terminal, else a plain line every 10 s).
    window
        Interleaving window in cycles (default :data:`DEFAULT_WINDOW`; 0 = strict).
    speedup
        Compute ``speedup`` against the one-core baseline (cached on disk).
    iterations
        ``"auto"``, ``"markers"`` or ``"none"``: replay the trace with its iterations
        relabelled as an import with that ``--iterations`` mode would have marked them
        (:func:`simsched.trace.iterations.with_iterations`); None: as the trace has them.
    sample_iterations
        Steady-state sampling (docs/engine.md §7): replay in detail until the policy has
        settled, then this many iterations (at least 2), and extrapolate the others; the
        one-core baseline is sampled alike (when the run is).  None: replay every iteration.
    sample_precision
        With ``sample_iterations``: replay further iterations until the makespan's 95 %
        interval is within this many percent of it (default
        :data:`DEFAULT_SAMPLE_PRECISION`, 0.5; 0 or None: exactly ``sample_iterations``).
        Given without ``sample_iterations``, it is refused (it would be ignored).

    Returns
    -------
    RunResult
        ``record`` holds the flat result record.

    Raises
    ------
    SimschedError
        For bad inputs (unknown scheduler or parameter, bad machine, bad trace).
    """
    from simsched.engine import JobSpec
    from simsched.engine.controllers import get_controller
    from simsched.engine.outcome import single_result
    from simsched.schedulers import get_scheduler

    given_seed, win = _options(seed, window)
    seed = int(given_seed or 0)
    progress = check_flag(progress, "progress")
    speedup = check_flag(speedup, "speedup")
    params = check_recordable(check_mapping(params, "params"), "params")
    overrides = check_mapping(overrides, "overrides")
    out = _out_dir(out_dir)
    sample_iterations, sample_precision = check_sampling(sample_iterations, sample_precision)
    if sample_iterations is not None:
        check_sampled_iterations(iterations)
    t0 = time.perf_counter()
    config = run_config(
        _trace_name(trace),
        machine if isinstance(machine, str) else None,
        overrides,
        scheduler,
        params,
        int(seed),
        win,
        iterations,
        sample_iterations,
        sample_precision,
    )
    base = record_base(win, scheduler=str(scheduler), params=dumps(params), seed=int(seed))
    t = None
    owned = False
    wrote: list[str] = []  # the files of out this run has written
    try:
        cls = get_scheduler(scheduler)
        resolved_params = cls.resolve_params(params)
        m = _machine(machine, overrides)
        base["scheduler"] = cls.name
        note_plugins(base, [("scheduler", cls.name)])
        base["params"] = dumps(resolved_params)
        base.update(machine_fields(m), machine_config=dumps(machine_config(m)))
        config["machine_resolved"] = machine_config(m)
        config["scheduler"] = cls.name
        config["params"] = resolved_params
        # written before the trace is opened, so that a run whose trace is refused keeps it
        if out is not None:
            write_json_atomic(out / "config.json", config)
            wrote.append("config.json")
        t, owned = as_trace(trace, cache_chunks=4)
        t = _with_iterations(t, iterations)
        h = t.header
        base["trace_digest"] = h.digest
        base["trace_program"] = h.program
        base["trace_args"] = dumps(list(h.args))
        base["trace_iterations"] = trace_iterations(t)
        sampler = None
        if sample_iterations is not None:
            sampler = make_sampler(
                t, sample_iterations, sample_precision, config["trace"], iterations
            )
        # A one-job set under ``all``: the pipeline of run_jobs, the single-run record.
        one = [JobSpec(t, cls, resolved_params, 0, "job0")]
        replayed, stats = _replay(
            m,
            one,
            get_controller("all")(m, 1),
            seed,
            win,
            progress,
            f"{cls.name} on {m.name}",
            stop_when=stop_hook(sampler),
        )
        res = single_result(replayed, 0)
        rec = dict(base)
        rec["status"] = "ok"
        rec["error"] = ""
        rec.update(metrics(res, stats, m, h))
        sampled = sample_fields(rec, sample_iterations, sampler, res, t)
        taken = {*rec, *sampled, *_LATE_FIELDS}
        rec.update(scheduler_fields(res.sched_fields, taken, f"scheduler {cls.name!r}"))
        rec.update(sampled)
        rec["sample_precision"] = float(sample_precision or 0.0) if sample_iterations else 0.0
        rec["warnings"] = dumps(_warnings(rec, t, m))
        if speedup:
            # sampled the way the run was; a run that left no iteration out is exact, and
            # so is its baseline (an extrapolated one divided by an exact makespan)
            if rec["sampled"]:
                b = baseline_estimate(
                    t, m, sample_iterations=sample_iterations, sample_precision=sample_precision
                )
            else:
                b = baseline_estimate(t, m)
            ms = int(rec["makespan_cycles"])
            rec["baseline_makespan_cycles"] = b.makespan
            rec["baseline_makespan_ci95"] = dumps([b.lo, b.hi])
            rec["speedup"] = b.makespan / ms if ms else 0.0
            lo, hi = speedup_interval(b, ms, *json.loads(rec["makespan_ci95"]))
            # no upper bound (an interval reaching zero cycles): null, JSON has no infinity
            rec["speedup_ci95"] = dumps([lo, hi if math.isfinite(hi) else None])
        else:
            rec["baseline_makespan_cycles"] = 0
            rec["baseline_makespan_ci95"] = dumps([0, 0])
            rec["speedup"] = 0.0
            rec["speedup_ci95"] = dumps([0.0, 0.0])
        rec["wall_s"] = time.perf_counter() - t0
        result = RunResult(
            record=rec,
            engine_result=res,
            mem_stats=stats,
            engine=res.engine,
            frames=np.asarray(t.strands.frame, dtype=np.int64),
            sockets_of_core=np.array([m.socket_of(c) for c in range(m.cores)], dtype=np.int64),
        )
        if out is not None:
            write_npz_atomic(out / "timeline.npz", **result.timeline_arrays())
            wrote.append("timeline.npz")
            _write_record(out, rec)
        return result
    except BaseException as exc:
        stop = _failed(out, base, exc, t0, wrote)
        if stop is not exc:
            raise stop from None  # Ctrl-C inside a compiled kernel's call back
        raise
    finally:
        if owned and t is not None:
            t.close()


#: Fields a single run's record gets after the scheduler's own (a scheduler's field of one of
#: these names would be replaced without a word).
_LATE_FIELDS = (
    "sample_precision",
    "warnings",
    "baseline_makespan_cycles",
    "baseline_makespan_ci95",
    "speedup",
    "speedup_ci95",
    "wall_s",
)


def _warnings(rec: dict[str, Any], trace: Trace, machine: Machine) -> list[dict[str, str]]:
    """The run's warnings for its record (:func:`simsched.comparison.run_notes`)."""
    from simsched.comparison import run_notes

    return [n.as_dict() for n in run_notes(rec, trace, machine) if n.level == "warning"]


def _write_record(out: Path, rec: dict[str, Any]) -> None:
    """``result.json``: the record with its nested fields as JSON objects (docs/results.md)."""
    write_json_atomic(out / "result.json", nest_fields(rec))


#: The files :func:`run` and :func:`run_jobs` write in ``out_dir`` beside ``result.json``.
_RUN_FILES = ("config.json", "timeline.npz")


#: What a write that found the disk full fails with (a quota, a file size limit too).
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _failed(
    out: Path | None, base: dict[str, Any], exc: BaseException, t0: float, wrote: Sequence[str]
) -> BaseException:
    """Write a failed run's record to ``out`` (if given, :func:`_write_error`) and return
    what to raise: ``exc``, or the interrupt it stands for (:func:`interrupt_in`)."""
    stop = interrupt_in(exc)
    if out is not None:
        _write_error(out, base, exc if stop is None else stop, t0, wrote=wrote)
    return exc if stop is None else stop


def _write_error(
    out: Path,
    base: dict[str, Any],
    exc: BaseException,
    t0: float,
    *,
    wrote: Sequence[str] | None = None,
) -> None:
    """Write the record of a failed run (``status: error``, the message) or of one
    stopped by Ctrl-C or SIGTERM (``status: interrupted``) to ``out``.

    ``wrote``: the files of :data:`_RUN_FILES` the failed run wrote; the others are an
    earlier run's in the same folder and are removed first, so that the new record does
    not sit beside another run's configuration and timeline, which readers took for its
    own (None: remove nothing, for a caller that wrote them itself).
    """
    stale = () if wrote is None else [n for n in _RUN_FILES if n not in wrote]
    for name in stale:
        with contextlib.suppress(OSError):  # the run's own error is the one to report
            (out / name).unlink(missing_ok=True)
    rec = {**base, "status": "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"}
    if isinstance(exc, KeyboardInterrupt):
        msg = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
    elif isinstance(exc, SimschedError):
        msg = str(exc)
    else:
        msg = described(exc)
    rec["error"] = msg or type(exc).__name__
    if not isinstance(exc, SimschedError | KeyboardInterrupt):
        rec["traceback"] = traceback.format_exc(limit=8)
    rec["wall_s"] = time.perf_counter() - t0
    try:
        _write_record(out, rec)
    except SimschedError as again:
        # A full disk that failed the run's own result.json fails this record too, and
        # left config.json and timeline.npz without one (readers refuse the folder): the
        # timeline, much the largest, makes room for it.
        timeline = out / "timeline.npz"
        if getattr(again, "errno", None) in _NO_SPACE and timeline.exists():
            with contextlib.suppress(OSError, SimschedError):
                timeline.unlink()
                _write_record(out, rec)


class Comparison(list[RunResult]):
    """The runs of :func:`compare` (a list of :class:`RunResult`) and their notes.

    Attributes
    ----------
    notes
        What the table alone would not explain (:func:`simsched.comparison.compare_notes`).
    """

    def __init__(self, results: Sequence[RunResult] = (), notes: Sequence[Any] = ()) -> None:
        super().__init__(results)
        self.notes = list(notes)


def compare(
    trace: Any,
    machine: Any,
    schedulers: Sequence[str] | str,
    seeds: int = 1,
    *,
    on_result: Callable[[RunResult], None] | None = None,
    **kw: Any,
) -> Comparison:
    """Run several schedulers on the same trace and machine.

    Parameters
    ----------
    trace, machine
        As for :func:`run`.
    schedulers
        Scheduler names (or one comma-separated string).
    seeds
        Seeds ``0 .. seeds-1`` for randomised schedulers; deterministic ones run once.
    on_result
        Called with each run's :class:`RunResult` as soon as it ends, before the next
        starts: ``compare --out`` saves it there, so that the runs that finished are kept
        when a later one fails or is interrupted.
    **kw
        Passed on to :func:`run` (``overrides``, ``window``, ``progress``...).
        ``params`` go to the schedulers that have them (a parameter no scheduler
        knows is an error).  Not ``seed`` (see ``seeds``) nor ``out_dir``: save the runs
        with :func:`simsched.experiments.compared.save_comparison`, as ``compare --out``
        does.

    Returns
    -------
    Comparison
        The runs in the order of ``schedulers``, then seed, with ``notes``: one line per
        outcome the numbers alone do not explain (docs/results.md, "Notes").

    Raises
    ------
    ConfigError
        ``schedulers`` is not a string or a list of names (a mapping is refused), names a
        policy twice, or an option is refused (see :func:`run`).
    """
    from simsched.comparison import compare_notes
    from simsched.schedulers import get_scheduler

    schedulers = parse_scheduler_names(schedulers)
    seeds = check_int(spelled("compare: seeds", "--seeds"), seeds, 1, 1_000_000)
    check_callable(on_result, "on_result")
    classes = [get_scheduler(s.strip()) for s in schedulers]
    canonical = [c.name for c in classes]
    for cls in classes:
        if canonical.count(cls.name) > 1:
            # name every spelling: "ws,WS" read "ws and another alias both mean ws"
            same = [n for n, c in zip(schedulers, classes, strict=True) if c.name == cls.name]
            both = "both" if len(same) == 2 else "all"
            raise ConfigError(
                f"schedulers: {', '.join(same[:-1])} and {same[-1]} {both} mean {cls.name}"
            )
    if "seed" in kw:
        raise ConfigError(
            f"compare: seed={kw['seed']!r}: compare runs seeds 0..seeds-1; give seeds=N"
        )
    if kw.get("out_dir") is not None:
        # every run wrote the same three files there: only the last run was left
        raise ConfigError(
            f"compare: out_dir={kw['out_dir']!r} would keep only the last run; "
            "save the runs with simsched.experiments.compared.save_comparison(out_dir, "
            "results, trace, machine)"
        )
    import inspect

    # run() would say so with a TypeError naming itself, after the machine and the trace
    known = set(inspect.signature(run).parameters) - {"trace", "machine", "scheduler"}
    stray = sorted(k for k in kw if k not in known)
    if stray:
        listed = ", ".join(sorted(known - {"seed", "out_dir"}))  # refused below, by name
        raise ConfigError(f"compare: unknown option {stray[0]!r} (it takes {listed})")
    params = check_mapping(kw.pop("params", None), "params")
    unknown = sorted(k for k in params if not any(k in c.param_defaults for c in classes))
    if unknown:
        raise ConfigError(
            f"compare: parameter(s) {', '.join(unknown)} belong to none of the schedulers "
            f"{', '.join(c.name for c in classes)}"
        )
    if kw.get("sample_iterations") is not None:
        check_sampled_iterations(kw.get("iterations"))
    m = _machine(machine, kw.get("overrides"))  # a machine that cannot run fails first
    t, owned = as_trace(trace, cache_chunks=4)
    try:
        mode = kw.pop("iterations", None)
        t = _with_iterations(t, mode)
        if kw.get("sample_iterations") is not None:
            # the runs get the relabelled trace without the mode their error would name
            check_sampleable(t, _trace_name(trace), mode)
        out: list[RunResult] = []
        for name, cls in zip(schedulers, classes, strict=True):
            mine = {k: v for k, v in params.items() if k in cls.param_defaults}
            for seed in range(int(seeds) if cls.randomized else 1):
                out.append(run(t, machine, name.strip(), mine, seed=seed, **kw))
                if on_result is not None:
                    on_result(out[-1])
        return Comparison(out, compare_notes([r.record for r in out], t, m))
    finally:
        if owned:
            t.close()


@dataclass
class JobsResult:
    """The outcome of a multi-job run.

    Attributes
    ----------
    record
        JSON-able result record (docs/results.md, "Multi-job records"): totals, ``jobs``
        (one dict per job), ``allotment`` series and ``realloc_warmup``.
    replay
        The engine's :class:`~simsched.engine.ReplayResult` (None when the run failed).
    mem_stats
        ``MemorySystem.stats()`` after the replay.
    """

    record: dict[str, Any]
    replay: Any = None
    mem_stats: dict[str, Any] = field(default_factory=dict)


def run_jobs(
    jobs: Any,
    machine: Any,
    *,
    controller: str | None = None,
    controller_params: dict[str, Any] | None = None,
    quantum: int | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    window: int | None = None,
    out_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> JobsResult:
    """Replay a job set: several programs arriving over time, sharing one machine.

    Parameters
    ----------
    jobs
        A job-set YAML path, dict, or :class:`simsched.jobset.JobSet` (docs/jobs.md).
    machine
        Preset name, YAML path, dict or :class:`simsched.machine.Machine`.
    controller
        Processor controller (``all``, ``static``, ``equi``...); default: the job set's.
    controller_params
        Controller parameters; default: the job set's.
    quantum
        Controller quantum in cycles (0: reallocate only at arrivals and completions);
        default: the job set's.
    seed
        Overrides the job set's seed (arrivals and the job schedulers' generators).
    overrides
        Dotted machine overrides.
    window
        Interleaving window in cycles (default :data:`DEFAULT_WINDOW`).
    out_dir
        When given, ``config.json`` and ``result.json`` are written there atomically (also
        when the run fails, with ``"status": "error"``, removing an earlier run's
        ``config.json`` and ``timeline.npz`` it did not replace).
    progress
        Report progress on stderr (a bar at a terminal, else a plain line every 10 s).

    Returns
    -------
    JobsResult
        ``record`` holds the multi-job result record.
    """
    from simsched.comparison import jobs_notes
    from simsched.engine import JobSpec
    from simsched.engine.controllers import check_departures, get_controller
    from simsched.engine.record import jobs_metrics, jobs_timeline_arrays
    from simsched.jobset import JobSet, check_built_jobset, load_jobset
    from simsched.schedulers import get_scheduler

    seed, win = _options(seed, window)
    progress = check_flag(progress, "progress")
    if quantum is not None:
        quantum = check_int("quantum", quantum, 0, MAX_QUANTUM)
    out = _out_dir(out_dir)
    t0 = time.perf_counter()
    base = record_base(win, kind="jobs")
    traces: list[Any] = []
    owned: list[Any] = []  # the traces this call opened (and closes)
    wrote: list[str] = []  # the files of out this run has written
    try:
        if isinstance(jobs, JobSet):
            check_built_jobset(jobs)
            js = jobs
        else:
            js = load_jobset(jobs, seed=seed)
        if seed is not None:
            js.seed = seed
        check_seed(js.seed, "job set seed")  # a JobSet made in Python skipped the schema
        m = _machine(machine, overrides)
        cname = js.controller if controller is None else controller
        cparams = js.controller_params if controller_params is None else controller_params
        q = js.quantum if quantum is None else int(quantum)
        try:
            ctl = get_controller(cname)(m, len(js.jobs), cparams, q)
        except ConfigError as exc:
            if controller is None and controller_params is None and quantum is None and js.source:
                # every value came from the job file: name it, as its other errors do
                raise ConfigError(f"{js.source}: {exc}") from None
            raise
        try:  # before any trace is opened or made (the engine checks it too)
            classes = [get_scheduler(j.scheduler) for j in js.jobs]
            check_departures(ctl, classes)
        except ConfigError as exc:
            raise ConfigError(f"{js.source}: {exc}" if js.source else str(exc)) from None
        base.update(
            {
                **machine_fields(m),
                "controller": ctl.name,
                "controller_params": dict(ctl.params),
                "quantum": ctl.quantum,
                "seed": js.seed,
                "jobset": js.source,
            }
        )
        config = {
            **base,
            "machine_resolved": machine_config(m),
            "jobs": [
                {
                    "name": j.name,
                    "trace": str(j.trace),
                    "scheduler": j.scheduler,
                    "params": j.params,
                    "arrival": j.arrival,
                }
                for j in js.jobs
            ],
        }
        if out is not None:
            write_json_atomic(out / "config.json", config)
            wrote.append("config.json")
        specs = []
        opened: dict[Any, Any] = {}  # copies of a program share one open trace
        for j, cls in zip(js.jobs, classes, strict=True):
            t = opened.get(j.trace)
            if t is None:
                # a JobSet made in Python skipped load_jobset's check of its trace files
                try:
                    t, mine = as_trace(j.trace, cache_chunks=2)
                except (ConfigError, TraceFormatError) as exc:
                    # a file that is no trace named neither the job nor its job set
                    where = f"{js.source}: job {j.name!r}" if js.source else f"job {j.name!r}"
                    raise type(exc)(f"{where}: {exc}") from None
                opened[j.trace] = t
                if mine:  # a Trace the caller opened stays open
                    owned.append(t)
            traces.append(t)
            specs.append(JobSpec(t, cls, j.params, j.arrival, j.name))
        note_plugins(base, [("controller", ctl.name), *(("scheduler", c.name) for c in classes)])
        try:  # the engine checks it too, without knowing the job set's file
            check_arrivals(specs, ctl.quantum)
        except ConfigError as exc:
            raise ConfigError(f"{js.source}: {exc}" if js.source else str(exc)) from None
        res, stats = _replay(
            m, specs, ctl, js.seed, win, progress, f"{len(specs)} jobs on {m.name}"
        )
        rec = {**base, "status": "ok", "error": ""}
        rec.update(jobs_metrics(res, stats, m, traces))
        rec["warnings"] = [
            n.as_dict() for n in jobs_notes([j.scheduler for j in js.jobs], ctl.name)
        ]
        for jr, j, cls in zip(rec["jobs"], js.jobs, classes, strict=True):
            # resolved, as a single run records them (a JobSet made in Python recorded
            # its parameters as given: {} for CAB's defaults, 'PARENT-first', 'WS')
            jr["scheduler"] = cls.name
            jr["params"] = cls.resolve_params(dict(j.params))
            jr["trace"] = str(j.trace)
        rec["wall_s"] = time.perf_counter() - t0
        if out is not None:
            write_npz_atomic(out / "timeline.npz", **jobs_timeline_arrays(res, traces, m))
            wrote.append("timeline.npz")
            _write_record(out, rec)
        return JobsResult(record=rec, replay=res, mem_stats=stats)
    except BaseException as exc:
        stop = _failed(out, base, exc, t0, wrote)
        if stop is not exc:
            raise stop from None  # Ctrl-C inside a compiled kernel's call back
        raise
    finally:
        for t in owned:
            t.close()
