"""``simsched run`` and ``simsched compare``: replay a trace under schedulers.

Thin layers over :func:`simsched.run` and :func:`simsched.compare`.  ``--set key=value``
sets a scheduler parameter when a chosen scheduler has a parameter of that name, and
otherwise overrides a machine field (dotted, as ``simsched machine show --set``);
``--param`` always means a scheduler parameter.  ``compare`` prints one column per
scheduler with the mean and, for randomised schedulers run with several seeds, the spread
(min–max) over seeds, and for a sampled makespan its 95 % interval's half-width; with
``--baseline`` the other schedulers' columns are ratios to the baseline with a 95 %
confidence interval (:func:`simsched.comparison.baseline_ratios`);
the notes under the table come from :func:`simsched.comparison.compare_notes`;
``--out`` saves the runs as a results store (:mod:`simsched.experiments.compared`).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Column, Table

from simsched.cli._common import (
    MachineOpt,
    ProgressOpt,
    console,
    err_console,
    parse_kv,
    print_json,
    print_table,
    print_warning,
    want_progress,
    written_float,
)
from simsched.errors import ConfigError
from simsched.progress import plural

#: Metrics shown by ``compare`` and summarised over seeds in its JSON.
SUMMARY_METRICS = (
    "makespan_cycles",
    "speedup",
    "L1_misses",
    "mpki",
    "offchip_bytes",
    "steals",
    "idle_cycles",
    "dram_local",
    "dram_remote",
)

TraceOpt = Annotated[Path, typer.Option("--trace", "-t", help="trace file (.sst)")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="scheduler parameter or machine override key=value (dotted)"),
]
ParamOpt = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="scheduler parameter key=value")
]
# `\\[default: ...]` in a help text: --help renders it as rich markup, which would take a
# bare `[default: ...]` for a style tag and print nothing of it.
IterationsOpt = Annotated[
    str | None,
    typer.Option(
        "--iterations",
        help="relabel the trace's iterations: auto (its own, else found from the DAG) | "
        "markers (SS_ITER marks only) | none \\[default: as the trace has them]",
    ),
]
SampleOpt = Annotated[
    int | None,
    typer.Option(
        "--sample-iterations",
        help="steady-state sampling: replay until the policy settles, then K iterations in "
        "detail, and extrapolate the rest (K >= 2; the trace must have iterations)",
    ),
]
PrecisionOpt = Annotated[
    float | None,
    typer.Option(
        "--sample-precision",
        parser=written_float,
        metavar="<float>",
        help="with --sample-iterations: replay further iterations until the makespan's 95 % "
        "interval is within this many percent of it (0: exactly K) \\[default: 0.5]",
    ),
]


def _precision(sample_iterations: int | None, sample_precision: float | None) -> float | None:
    """``--sample-precision``, or its default when sampling (None when not: the API refuses
    a precision without samples); refused without ``--sample-iterations`` (it would be
    ignored, as a sweep spec refuses it)."""
    from simsched.engine.sampled import DEFAULT_SAMPLE_PRECISION

    if sample_precision is not None and sample_iterations is None:
        raise ConfigError("--sample-precision applies with --sample-iterations")
    if sample_iterations is None:
        return None
    return DEFAULT_SAMPLE_PRECISION if sample_precision is None else sample_precision


WindowOpt = Annotated[
    int | None, typer.Option("--window", help="interleaving window in cycles (0 = strict)")
]


def _split(
    set_: list[str] | None, param: list[str] | None, schedulers: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Scheduler parameters and machine overrides from ``--set`` and ``--param``."""
    from simsched.schedulers import get_scheduler

    known = set()
    for name in schedulers:
        known |= set(get_scheduler(name).param_defaults)
    params = parse_kv(param, "--param")
    overrides = {}
    for k, v in parse_kv(set_, "--set").items():
        if k in known:
            if k in params:  # one of the two values would be dropped without a word
                raise ConfigError(f"--set {k}: also given as --param {k}")
            params[k] = v
        elif _machine_field(k):
            overrides[k] = v
        else:
            # taken for a machine field, a misspelt parameter was "<machine>: k: unknown key"
            names = ", ".join(sorted(known)) or "none"
            raise ConfigError(
                f"--set {k}={v}: neither a parameter of {', '.join(schedulers)} ({names}) "
                "nor a machine field (simsched machine show)"
            )
    return params, overrides


def _machine_field(key: str) -> bool:
    """Whether ``--set key=...`` names a machine field (dotted: ``caches.L2.size``)."""
    from simsched.machine import Machine

    return key.split(".")[0] in {*Machine.model_fields, "cores"}  # cores: one-socket shorthand


def _check_run_folder(out: Path) -> None:
    """Refuse an existing ``--out`` folder a run's files would be mixed into.

    A run writes its config, result and timeline straight into ``--out``.  Written into a
    sweep point's folder they would replace the point's files and leave its row, which
    tables read, saying another run; written into a sweep's output folder they would sit
    among its ``points/``.  Either is found only by someone reading the files later.
    """
    from simsched.experiments.point import RUN_FILES
    from simsched.experiments.store import POINT_FILE, POINTS_DIR, ROW_FILE

    # found only when the run is over and its files are written: the run was lost
    for name in RUN_FILES:
        if (out / name).is_dir():
            raise ConfigError(f"--out {out}: {name} there is a folder, not a run's file")

    def holds_a_point(folder: Path) -> bool:
        return (folder / POINT_FILE).exists() or (folder / ROW_FILE).exists()

    if holds_a_point(out):
        raise ConfigError(
            f"--out {out}: a sweep point's folder (it holds {POINT_FILE} or {ROW_FILE}); "
            "a run there would replace the point's files and leave its row: give a "
            "folder of its own"
        )
    if (out / POINTS_DIR).is_dir():
        raise ConfigError(
            f"--out {out}: a sweep's output folder (it holds {POINTS_DIR}/); give the run "
            "a folder of its own"
        )
    if out.name == POINTS_DIR and any(holds_a_point(d) for d in out.iterdir()):
        raise ConfigError(
            f"--out {out}: a sweep's folder of points (a folder there holds {POINT_FILE} "
            f"or {ROW_FILE}); give the run a folder of its own"
        )


def run_cmd(
    machine: MachineOpt,
    trace: Annotated[Path | None, typer.Option("--trace", "-t", help="trace file (.sst)")] = None,
    jobs: Annotated[
        Path | None,
        typer.Option("--jobs", "-j", help="job-set YAML: several programs sharing the machine"),
    ] = None,
    controller: Annotated[
        str | None,
        typer.Option(
            "--controller", help="processor controller for --jobs (all, static, equi, deq)"
        ),
    ] = None,
    quantum: Annotated[
        int | None, typer.Option("--quantum", help="controller quantum in cycles (--jobs)")
    ] = None,
    quantum_ms: Annotated[
        float | None,
        typer.Option(
            "--quantum-ms",
            parser=written_float,
            metavar="<float>",
            help="controller quantum in ms at the machine's clock_ghz",
        ),
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", "-s", help="ws, pdf, ... \\[default: ws]")
    ] = None,
    set_: SetOpt = None,
    param: ParamOpt = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="random seed of the scheduler \\[default: 0; --jobs: the job set's seed]",
        ),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="print the result record as JSON")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="folder for config, result and timeline")
    ] = None,
    window: WindowOpt = None,
    iterations: IterationsOpt = None,
    sample_iterations: SampleOpt = None,
    sample_precision: PrecisionOpt = None,
    progress: ProgressOpt = None,
) -> None:
    """Replay a trace under one scheduler, or a job set under a processor controller."""
    import simsched

    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder (--out names a folder)")
    if out is not None and out.is_dir():
        _check_run_folder(out)
    if (trace is None) == (jobs is None):
        raise ConfigError("give exactly one of --trace and --jobs")
    # before the machine is loaded for --quantum-ms, which took a controller's parameter
    # for an unknown machine key
    job_overrides = _jobs_overrides(set_) if jobs is not None else {}
    if quantum_ms is not None:
        if jobs is None:
            raise ConfigError("--quantum-ms applies to --jobs runs")
        if quantum is not None:
            raise ConfigError("give --quantum or --quantum-ms, not both")
        from simsched.engine.controllers import quantum_cycles
        from simsched.machine import load_machine

        quantum = quantum_cycles(
            load_machine(machine, job_overrides or None),
            quantum_ms,
            name="--quantum-ms",
        )
    precision = _precision(sample_iterations, sample_precision)
    if jobs is not None:
        # each job of a job set names its own scheduler and trace; sampling is per trace
        for given, name, why in (
            (sample_iterations, "--sample-iterations", ""),
            (scheduler, "--scheduler", " (a job set's file names each job's scheduler)"),
            (iterations, "--iterations", ""),
        ):
            if given is not None:
                raise ConfigError(f"{name} applies to --trace runs{why}")
        _run_jobs(
            jobs,
            machine,
            controller,
            quantum,
            job_overrides,
            param,
            seed,
            json_,
            out,
            window,
            progress,
        )
        return
    if controller is not None or quantum is not None:
        raise ConfigError("--controller and --quantum apply to --jobs runs")
    scheduler = scheduler or "ws"
    params, overrides = _split(set_, param, [scheduler])
    res = simsched.run(
        trace,
        machine,
        scheduler,
        params,
        0 if seed is None else seed,
        overrides=overrides or None,
        out_dir=out,
        progress=want_progress(progress),
        window=window,
        iterations=iterations,
        sample_iterations=sample_iterations,
        sample_precision=precision,
    )
    rec = res.record
    note = (
        no_iterations_note(trace, scheduler, rec["trace_iterations"], iterations) if trace else ""
    )
    if note:
        err_console.print(note)  # stderr: --json output stays one object
    if json_:
        from simsched.engine.record import nest_fields

        print_json(nest_fields(rec))
        _print_warnings(rec, note)
        return
    table = Table("metric", "value", title=f"{rec['scheduler']} on {rec['machine']}")
    levels = [c["name"] for c in res.mem_stats["levels"]]
    keys = ["makespan_cycles", "speedup", "instructions", "refs"]
    keys += [f"{lv}_{f}" for lv in levels for f in ("accesses", "misses")]
    keys += ["mpki", "offchip_bytes", "mem_utilization", "dram_local", "dram_remote"]
    keys += ["steal_attempts", "steals", "idle_cycles", "wall_s"]
    for k in keys:
        v = rec[k]
        table.add_row(k, f"{v:.4g}" if isinstance(v, float) else f"{v:,}")
    from simsched.comparison import sampled_interval

    interval = sampled_interval(rec)
    if interval is not None:
        lo, hi = interval
        # a prediction interval of the detailed makespan, not a confidence interval of a mean
        table.add_row("makespan 95 % prediction interval", f"{lo:,.0f}–{hi:,.0f}")
        speedup = sampled_interval(rec, "speedup")
        if rec["speedup"] and speedup is not None:
            # an interval with no upper bound (its makespan's reaching zero) ends in ∞
            s_lo, s_hi = speedup
            s_hi_text = "∞" if math.isinf(s_hi) else format(s_hi, ".4g")
            table.add_row("speedup 95 % interval", f"{s_lo:.4g}–{s_hi_text}")
        table.add_row(
            "detailed iterations",
            f"{rec['detailed_iterations']} of {rec['trace_iterations']} "
            f"(settled at {rec['settled_at']}; counters are theirs)",
        )
    elif rec.get("sample_iterations"):
        # asked for, but nothing was left out: say why rather than look like a sample
        from simsched.engine.sampled import leaves_none_out

        settled = rec["settled_at"]
        k = rec["sample_iterations"]
        n = rec["trace_iterations"]
        if leaves_none_out(k, n):
            # K + 1 iterations or more: the run never asked the policy, so -1 is "unknown"
            why = f"{k} samples after the first iteration would leave none out"
        elif settled < 0:
            why = f"the policy never settled, {k} samples would leave none out"
        elif settled + k < n:
            # K samples left iterations out: the precision asked for took them all
            why = (
                f"settled at {settled}, but the 95 % interval did not come within "
                f"{rec['sample_precision']:g} % before the last iteration"
            )
        else:
            why = f"settled at {settled}, {k} samples would leave none out"
        table.add_row("detailed iterations", f"all {n} (not sampled: {why})")
    print_table(table)
    _print_warnings(rec, note)


def _print_warnings(rec: dict, note: str) -> None:
    """The record's warnings on stderr, but the one ``note`` has said already."""
    for w in json.loads(rec.get("warnings", "[]")):
        if note and w["code"] == "no-iterations":
            continue  # the note above said it, with what to do about it
        print_warning(w["message"])


# What an iteration-learning policy does on a trace without iterations ([LAWS15] §3.4, §4).
_NO_ITERATIONS = {
    "laws": "runs its first-iteration policy for the whole run (allocator placement, no "
    "packing, no cross-socket stealing)",
    "laws-nc": "runs its first-iteration policy for the whole run (allocator placement, no "
    "cross-socket stealing)",
    "cats": "runs its first-iteration policy for the whole run (no packing, no cross-socket "
    "stealing)",
}


def no_iterations_note(
    trace: Path, scheduler: str, n_iterations: int, iterations: str | None = None
) -> str:
    """One line saying what ``scheduler`` does on ``trace`` if it has no iterations, else "".

    Parameters
    ----------
    trace
        The trace that was run.
    scheduler
        The scheduler's name (``name:param=...`` forms are reduced to the name).
    n_iterations
        The iterations the replay saw (the record's ``trace_iterations``).
    iterations
        The run's ``--iterations`` (``None``: as the trace has them).

    Returns
    -------
    str
        The note for LAWS, LAWS-NC and CATS on a trace whose frames carry no iteration;
        an empty string otherwise.
    """
    name = scheduler.split(":", 1)[0].strip().lower()
    what = _NO_ITERATIONS.get(name)
    if what is None or n_iterations:
        return ""
    if iterations is not None and iterations.strip().lower() == "none":
        return f"note: {trace} has no iterations under --iterations none, so {name} {what}"
    if iterations is not None and iterations.strip().lower() == "auto":
        return (
            f"note: {trace} has no iterations, marked or found in its DAG, so {name} {what}; "
            "mark them with SS_ITER (a time loop in a Cilk function main calls is found only "
            "when the raw stream is imported: simsched trace import --iterations auto)"
        )
    return (
        f"note: {trace} has no iterations, so {name} {what}; if the program iterates, "
        "replay with --iterations auto (found from its DAG) or mark them with SS_ITER"
    )


def _jobs_overrides(set_: list[str] | None) -> dict[str, Any]:
    """``--set`` of a ``--jobs`` run: machine overrides only (one line for anything else)."""
    overrides = parse_kv(set_, "--set")
    given = {item.partition("=")[0].strip(): item for item in set_ or []}
    for k in overrides:
        if not _machine_field(k):
            # it was "<machine>: k: unknown key", for what may be a controller's parameter
            raise ConfigError(
                f"--set {given[k]}: not a machine field (simsched machine show); with --jobs, "
                "--set changes the machine only: give the controller's parameters in the job "
                "set (controller_params) and the jobs' in scheduler_params"
            )
    return overrides


def _run_jobs(
    jobs, machine, controller, quantum, overrides, param, seed, json_, out, window, progress
) -> None:
    import simsched

    if param:
        raise ConfigError(
            "--param applies to --trace runs; give job schedulers' parameters "
            "in the job set (scheduler_params)"
        )
    res = simsched.run_jobs(
        jobs,
        machine,
        controller=controller,
        quantum=quantum,
        seed=seed,  # None: the job set's own (an explicit --seed 0 overrides it too)
        overrides=overrides or None,
        window=window,
        out_dir=out,
        progress=want_progress(progress),
    )
    rec = res.record
    if json_:
        print_json(rec)
        _print_jobs_warnings(rec)
        return
    table = Table(
        "job",
        "scheduler",
        "arrival",
        "start",
        "finish",
        "response",
        "util",
        title=f"{plural(rec['n_jobs'], 'job')} on {rec['machine']} under {rec['controller']}"
        + (f" (quantum {rec['quantum']:,})" if rec["quantum"] else ""),
    )
    for j in rec["jobs"]:
        table.add_row(
            j["name"],
            j["scheduler"],
            f"{j['arrival']:,}",
            f"{j['start']:,}",
            f"{j['finish']:,}",
            f"{j['response_cycles']:,}",
            f"{j['utilization']:.3f}",
        )
    print_table(table)
    console.print(jobs_summary(rec))
    _print_jobs_warnings(rec)


def _print_jobs_warnings(rec: dict[str, Any]) -> None:
    """A job-set record's warnings on stderr, whether the record is printed as a table or
    as JSON (stdout then stays one JSON object)."""
    for w in rec.get("warnings", []):
        print_warning(w["message"])


def jobs_summary(rec: dict[str, Any]) -> str:
    """The sentences under a job set's table: totals, then the cache cost of core moves.

    Two different counts are named apart: ``reallocations`` (cores the controller took
    from a running job) and ``realloc_warmup.joins`` (cores that joined a job after
    serving another, including cores freed by a finished job); ``core_moves`` (cores that
    joined a job other than the last one they held, each away ``costs.core_move``
    cycles) is said when there are any; a negative
    ``extra_misses`` is said as fewer misses, not printed as a negative cost.
    """
    from simsched.engine.outcome import WARMUP_REFS

    w = rec["realloc_warmup"]
    text = (
        f"makespan {rec['makespan_cycles']:,} cycles; mean response "
        f"{rec['mean_response_cycles']:,.0f}; utilisation {rec['utilization']:.3f}; "
        f"{plural(rec['reallocations'], 'core', thousands=True)} taken from a running job."
    )
    if rec.get("core_moves"):
        text += (
            "  Cores switched to another job "
            f"{plural(rec['core_moves'], 'time', thousands=True)}, away "
            f"{rec['move_cycles']:,} cycles in all (costs.core_move each)."
        )
    if not w["joins"]:
        return text
    extra = float(w["extra_misses"])
    misses = plural(round(abs(extra)), "private-cache miss", "private-cache misses", thousands=True)
    if round(extra) == 0:  # "-0 ... fewer", "0 ... more" for no difference at all
        cost = "as many private-cache misses as"
    elif extra > 0:
        cost = f"{misses} more than"
    else:
        cost = f"{misses} fewer than"
    tail = "" if round(extra) > 0 else " (no warm-up cost shows)"
    return (
        f"{text}\nCores joined a job after serving another "
        f"{plural(w['joins'], 'time', thousands=True)}; in their "
        f"first {WARMUP_REFS:,} references there they had {cost} their jobs' miss rates "
        f"over their other references predict{tail}."
    )


def _summary(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for k in SUMMARY_METRICS + tuple(
        key for key in records[0] if key.endswith("_misses") and key not in SUMMARY_METRICS
    ):
        vals = [float(r[k]) for r in records if k in r]
        if not vals:
            continue
        out[k] = {
            "mean": statistics.fmean(vals),
            "std": statistics.pstdev(vals) if len(vals) > 1 else 0.0,
            "min": min(vals),
            "max": max(vals),
            "n": len(vals),
        }
    return out


def _compare_saving(out: Path | None, trace: Any, machine: Any, names: list[str], **kw: Any) -> Any:
    """``simsched.compare``, each run saved into ``out`` (if given) as it ends, so that
    those that finished stay when a later one fails or is interrupted (the folder was
    left empty); the folder's table is made once, at the end, either way."""
    import contextlib

    import simsched

    if out is None:
        return simsched.compare(trace, machine, names, **kw)
    from simsched.errors import SimschedError
    from simsched.experiments.compared import save_comparison
    from simsched.experiments.store import consolidate
    from simsched.trace import open_trace

    saved = 0
    with contextlib.ExitStack() as stack:
        opened: list[Any] = []  # the trace, opened once for the saved runs' digests

        def save(result: Any) -> None:
            nonlocal saved
            if not opened:
                opened.append(stack.enter_context(open_trace(trace)))
            save_comparison(out, [result], opened[0], machine, kw["overrides"], table=False)
            saved += 1

        try:
            results = simsched.compare(trace, machine, names, on_result=save, **kw)
        except BaseException:
            if saved:
                with contextlib.suppress(SimschedError):  # the run's error is the one to say
                    consolidate(out)
            raise
    consolidate(out)
    return results


def compare_cmd(
    trace: TraceOpt,
    machine: MachineOpt,
    schedulers: Annotated[
        str, typer.Option("--schedulers", "-s", help="comma-separated scheduler names")
    ] = "ws,pdf",
    seeds: Annotated[int, typer.Option("--seeds", help="seeds per randomised scheduler")] = 1,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="print every metric as a ratio to this scheduler's, with a 95 % confidence "
            "interval over seeds (paired t on log-ratios); added to -s if missing",
        ),
    ] = None,
    set_: SetOpt = None,
    param: ParamOpt = None,
    json_: Annotated[
        bool, typer.Option("--json", help="print records and summary as JSON")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="save the runs as a results store (results show, plot sweep)"
        ),
    ] = None,
    window: WindowOpt = None,
    iterations: IterationsOpt = None,
    sample_iterations: SampleOpt = None,
    sample_precision: PrecisionOpt = None,
    progress: ProgressOpt = None,
) -> None:
    """Run several schedulers on one trace and machine and compare them."""
    from simsched.api import parse_scheduler_names
    from simsched.schedulers import get_scheduler

    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder (--out names a folder)")
    if out is not None:
        from simsched.files import folder_blocker

        # A folder that cannot be made (a file in the way, a name too long) is said before
        # the first run, not after it.
        blocker = folder_blocker(out)
        if blocker is not None:
            raise ConfigError(f"--out {out}: {blocker}")

    names = parse_scheduler_names(schedulers)
    base = None
    if baseline is not None:
        try:
            base = get_scheduler(baseline.strip()).name
        except ConfigError as exc:  # it said "unknown scheduler", as if of --schedulers
            raise ConfigError(f"--baseline {baseline!r}: {exc}") from None
        if base not in {get_scheduler(n).name for n in names}:
            names = [base, *names]
    params, overrides = _split(set_, param, names)
    results = _compare_saving(
        out,
        trace,
        machine,
        names,
        seeds=seeds,
        params=params or None,
        overrides=overrides or None,
        window=window,
        iterations=iterations,
        sample_iterations=sample_iterations,
        sample_precision=_precision(sample_iterations, sample_precision),
        progress=want_progress(progress),
    )
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r.record["scheduler"], []).append(r.record)
    summary = {name: _summary(recs) for name, recs in groups.items()}
    last = results[0].record.get("last_level", "L2")
    levels = [c["name"] for c in results[0].mem_stats["levels"]]
    cols = ["makespan_cycles", "speedup"] + [f"{lv}_misses" for lv in levels]
    cols += ["mpki", "offchip_bytes", "dram_local", "dram_remote", "steals", "idle_cycles"]
    ratios = None
    if base is not None:
        from simsched.comparison import baseline_ratios

        ratios = baseline_ratios([r.record for r in results], base, cols)
    if json_:
        from simsched.comparison import RATIO_TEST
        from simsched.engine.record import nest_fields

        doc: dict[str, Any] = {"runs": [nest_fields(r.record) for r in results]}
        doc["summary"] = summary
        doc["notes"] = [
            {**n.as_dict(), "level": n.level, "schedulers": list(n.schedulers)}
            for n in results.notes
        ]
        if ratios is not None:
            doc["baseline"] = {
                "scheduler": base,
                "test": RATIO_TEST,
                "ratios": {
                    name: {k: (v.as_dict() if v else None) for k, v in per.items()}
                    for name, per in ratios.items()
                },
            }
        print_json(doc)
        return
    print_table(_compare_table(results[0].record, groups, summary, cols, last, base, ratios))
    print_notes(results.notes)


def _compare_table(first, groups, summary, cols, last, base, ratios) -> Table:
    """One column per scheduler, one row per metric: a comparison of a few schedulers
    stays within 80 columns however long the numbers are."""
    from simsched.comparison import RATIO_TEST

    caption = f"mpki = {last} misses per 1000 instructions; mean [min–max] over seeds"
    if base is not None:
        caption = (
            f"mpki = {last} misses per 1000 instructions; {base}: mean [min–max] over "
            f"seeds; others: ratio to {base} (geometric mean) [95 % CI: {RATIO_TEST}]"
        )
    spread = {
        (name, k): _sampled_spread(recs, k)
        for name, recs in groups.items()
        for k in ("makespan", "speedup")
    }
    if any(v is not None for v in spread.values()):
        caption += (
            "; ±: half-width of a sampled makespan's 95 % prediction interval (of a "
            "speedup: its 95 % interval), in % of it (the widest over seeds)"
        )
    table = Table(
        "metric",
        *[Column(name, justify="right") for name in groups],
        title=f"{first['trace_program']} on {first['machine']} ({plural(first['cores'], 'core')})",
        caption=caption,
    )
    table.add_row("runs", *[str(len(recs)) for recs in groups.values()])
    for k in cols:
        fmt = (lambda v: f"{v:.3g}") if k in ("speedup", "mpki") else (lambda v: f"{v:,.0f}")
        row = [k]
        for name in groups:
            if ratios is not None and name != base:
                row.append(_ratio_cell(ratios[name][k]))
                continue
            s = summary[name][k]
            cell = fmt(s["mean"])
            if s["n"] > 1:
                cell += f" [{fmt(s['min'])}–{fmt(s['max'])}]"
            width = spread.get((name, k.removesuffix("_cycles")))
            if width is not None:
                cell += f" ±{_two_digits(width)} %"
            row.append(cell)
        table.add_row(*row)
    return table


def _sampled_spread(records: list[dict[str, Any]], name: str = "makespan") -> float | None:
    """The widest half-width, in percent of its value, of the sampled records' makespan
    interval (``name`` "speedup": speedup interval; None: no record is sampled, its value
    is the detailed run's)."""
    from simsched.comparison import sampled_interval

    key = "makespan_cycles" if name == "makespan" else name
    widths = []
    for rec in records:
        got = sampled_interval(rec, name)
        if got is not None and rec[key]:
            widths.append(50.0 * (got[1] - got[0]) / rec[key])
    return max(widths) if widths else None


def _two_digits(value: float) -> str:
    """``value`` to two significant digits, never in exponent form: a sampled interval of
    108 % of its makespan (two samples) was written ``1.1e+02``; an unbounded one (a
    speedup whose makespan interval reaches zero) is ``∞``."""
    import math

    import numpy as np

    if math.isinf(value):
        return "∞"

    return str(np.format_float_positional(float(f"{value:.2g}"), trim="-"))


def _ratio_cell(r: Any) -> str:
    """``0.912x [0.871–0.955]`` (no interval from one detailed pair; ``n/a`` for a zero
    value)."""
    if r is None:
        return "n/a"
    if r.n == 1 and not r.sampled:
        return f"{r.ratio:.3f}x"
    return f"{r.ratio:.3f}x [{r.lo:.3f}–{r.hi:.3f}]"


def print_notes(notes: list[Any]) -> None:
    """The notes under a comparison table, one line each (simsched.comparison)."""
    if notes:
        console.print("notes:", highlight=False)
    for n in notes:
        console.print(f"  - {n.text}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``compare`` to the main app."""
    app.command("run")(run_cmd)
    app.command("compare")(compare_cmd)
