"""Steady-state sampling benchmark: a 60-iteration heat under LAWS, detailed and sampled.

Prints one JSON line: the sampled makespan's error against the detailed one (%), whether
the detailed makespan lies in the sampled run's 95 % interval, the CPU seconds of both
runs (``time.process_time``: every thread of this process, so the chunk decoder counts)
and their ratio, wall seconds and the load average.  Targets (issue 23): within 2 % of the
detailed makespan and at least 3x cheaper in CPU time.  Both runs are in one process,
after a small warm-up run that loads the memory model's compiled kernels, and neither
computes the one-core baseline (``speedup=False``).

The workload is the medium LAWS study's heat (``experiments/laws/medium.yaml``: 8096
interior rows of 16 cells, leaves of 8 rows, on ``opteron-8380-4x4`` with caches / 64),
with 60 iterations instead of 20.

    python benchmarks/bench_sampling.py [--iters 60] [--samples 5] [--scheduler laws]

With ``--study SPEC`` (e.g. ``experiments/laws/medium.yaml``) it validates sampling on every
program of a sweep instead: each workload on the spec's first machine under each of
``--schedulers`` (seed 0), detailed and sampled.  The JSON line holds one entry per run
pair (``runs``), the largest error, how many detailed makespans fell outside their
interval, and the CPU seconds of all detailed and all sampled runs; a line per pair goes
to stderr as it ends, since the study takes hours.  Traces are generated into
``--traces`` (kept between runs).

With ``--coverage`` it measures how often the sampled run's 95 % interval holds the
detailed makespan, many times over: a ``--total``-iteration heat (default 100) is replayed
in detail under WS (seeds 0-2), and every window of ``--windows`` (default 20 and 60)
consecutive iterations is treated as a run of its own, settled after its third
iteration, sampled with ``--samples`` and each precision until the interval is narrow
enough, then extrapolated with ``simsched.engine.sampled.sampled_makespan`` and compared with the
window's detailed end.  The same windows are sampled with the mean's interval alone
(``t s / sqrt(n)`` times the remaining references, simsched's interval before the
prediction interval) for comparison.  The JSON line holds one entry per (window,
precision, interval) (``cells``) and the lag-1 autocorrelation of the iterations.

With ``--rules`` it compares settings of the sampling rule on runs replayed in detail at
the papers' sizes, without replaying anything: a sampled replay is the detailed one up to
where it stops, so :func:`simsched.engine.sampled.resample` applied to a detailed record's
``iteration_ends`` gives what the sampled run would have reported.  It reads the detailed
rows of ``--detailed`` and the sampled rows of ``--sampled`` (seed 0; by default the AMD
LAWS study's stencils replayed in detail and its rerun of 2026-12-02), checks that the
study's own setting reproduces every sampled row to the cycle, and then, for each
scheduler, each ``--ks`` and each ``--precisions``: how many of the detailed makespans
fall outside the interval, the largest error, and the iterations replayed in detail; and
the same over windows of ``--window`` iterations (default 100) cut from the detailed runs
every 5 iterations, each a run of its own settled after its third iteration.

Every mode prints exactly one JSON line on stdout.  ``--nx`` shrinks the heat's rows (the
tests run each mode at a tiny size).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MACHINE = "opteron-8380-4x4"
OVERRIDES = {"caches.L1.size": "1KB", "caches.L2.size": "8KB", "caches.L3.size": "96KB"}
HEAT = {"nx": 8098, "ny": 18, "cutoff": 8, "init": False}
TARGET_ERROR_PCT = 2.0
TARGET_CPU_SPEEDUP = 3.0


def _timed(fn):  # type: ignore[no-untyped-def]
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - t0


def _pair(trace: Path, machine: object, scheduler: str, k: int, precision: float) -> dict:
    """Detailed and sampled runs of one trace: the error and the CPU seconds of each."""
    import simsched

    def run(samples: int | None) -> dict:
        return simsched.run(
            trace,
            machine,
            scheduler,
            speedup=False,
            sample_iterations=samples,
            sample_precision=None if samples is None else precision,
        ).record

    full, cpu_full, _ = _timed(lambda: run(None))
    samp, cpu_samp, _ = _timed(lambda: run(k))
    lo, hi = json.loads(samp["makespan_ci95"])
    return {
        "scheduler": scheduler,
        "iterations": full["trace_iterations"],
        "sampled": samp["sampled"],
        "settled_at": samp["settled_at"],
        "detailed_iterations": samp["detailed_iterations"],
        "makespan_detailed": full["makespan_cycles"],
        "makespan_sampled": samp["makespan_cycles"],
        "error_pct": round(100.0 * (samp["makespan_cycles"] / full["makespan_cycles"] - 1), 3),
        "ci95_half_pct": round(50.0 * (hi - lo) / samp["makespan_cycles"], 3),
        "detailed_in_ci95": bool(lo <= full["makespan_cycles"] <= hi),
        "cpu_detailed_s": round(cpu_full, 2),
        "cpu_sampled_s": round(cpu_samp, 2),
    }


def _warm_up(machine: object, schedulers: list[str], overrides: dict | None = None) -> None:
    """Load the memory model's compiled kernels for ``machine`` (a small heat under each
    scheduler), so that the first timed run does not pay for them."""
    import simsched
    from simsched.workloads import generate

    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "warm.sst"
        generate("heat", small, **{**HEAT, "nx": 258, "iters": 2})
        for name in schedulers:
            simsched.run(small, machine, name, overrides=overrides, speedup=False)


def study(spec: str, schedulers: list[str], k: int, precision: float, traces: str) -> dict:
    """Validate sampling on every workload of a sweep spec (see the module docstring)."""
    from simsched.experiments.spec import load_spec
    from simsched.machine import Machine
    from simsched.trace.recipes import ensure_trace
    from simsched.workloads import generate

    load = round(os.getloadavg()[0], 2)
    loaded = load_spec(spec, small=False)
    points = loaded.points()
    machine = Machine.model_validate(points[0].machine["resolved"])
    _warm_up(machine, schedulers)
    done: set[str] = set()
    runs: list[dict] = []
    for p in points:
        label = p.workload["label"]
        if label in done or p.machine["label"] != points[0].machine["label"]:
            continue
        done.add(label)
        trace = ensure_trace(p.workload, traces, p.spec_dir, generate=generate)
        for name in schedulers:
            row = {"workload": label, **_pair(trace, machine, name, k, precision)}
            runs.append(row)
            print(
                f"{label} {name}: {row['error_pct']:+.3f} % "
                f"({row['detailed_iterations']} of {row['iterations']} detailed)",
                file=sys.stderr,
                flush=True,
            )
    cpu_full = sum(r["cpu_detailed_s"] for r in runs)
    cpu_samp = sum(r["cpu_sampled_s"] for r in runs)
    return {
        "bench": "sampling-study",
        "spec": spec,
        "machine": points[0].machine["label"],
        "samples": k,
        "precision_pct": precision,
        "runs": runs,
        "max_abs_error_pct": max((abs(r["error_pct"]) for r in runs), default=0.0),
        "outside_ci95": sum(1 for r in runs if r["sampled"] and not r["detailed_in_ci95"]),
        "cpu_detailed_s": round(cpu_full, 2),
        "cpu_sampled_s": round(cpu_samp, 2),
        "cpu_speedup": round(cpu_full / cpu_samp, 2) if cpu_samp else None,
        "loadavg_1m": load,
    }


def _iteration_ends(trace: Path, seed: int) -> tuple[np.ndarray, int]:
    """End cycle of every iteration of a detailed WS replay, and references per iteration."""
    import simsched
    from simsched.engine.sampling import iteration_weights
    from simsched.trace.reader import open_trace

    res = simsched.run(trace, MACHINE, "ws", seed=seed, overrides=OVERRIDES, speedup=False)
    t = open_trace(trace)
    try:
        refs = int(iteration_weights(t)[0])
    finally:
        t.close()
    return np.asarray(json.loads(res.record["iteration_ends"]), dtype=np.int64), refs


def _sample_window(ends: np.ndarray, refs: int, k: int, share: float, mean_only: bool):
    """Sample one window (its own run, settled after 3 iterations) as the engine would:
    (estimate, lo, hi, detailed iterations)."""
    from simsched.engine.sampled import resample, sampled_makespan, stop_points
    from simsched.stats import t_quantile

    n_it, settled = len(ends), 3
    weights = np.full(n_it, refs, dtype=np.int64)
    if not mean_only:
        got = resample(ends, settled, k, share * 100.0, weights)
        return got.estimate.makespan, got.estimate.lo, got.estimate.hi, got.detailed
    # simsched's interval before the prediction interval, for comparison: the mean's alone
    for o in stop_points(ends, settled, k, weights):
        detailed = o.detailed
        est = sampled_makespan(o, 0.0)
        rates = o.sample_rates()
        rest = float(refs * (n_it - detailed))
        half = t_quantile(0.975, o.samples - 1) * rates.std(ddof=1) / o.samples**0.5 * rest
        lo, hi = est.makespan - half, est.makespan + half
        if hi - lo <= 2.0 * share * est.makespan:
            return est.makespan, lo, hi, detailed
    return int(ends[-1]), int(ends[-1]), int(ends[-1]), n_it


def coverage(k: int, heat: dict, total: int = 100, seeds=(0, 1, 2), lengths=(20, 60)) -> dict:
    """Interval coverage over windows of detailed WS replays (see the module docstring)."""
    from simsched.workloads import generate

    load = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "heat.sst"
        generate("heat", trace, **{**heat, "iters": total})
        runs = [_iteration_ends(trace, s) for s in seeds]
    periods = np.concatenate([np.diff(e)[3:] for e, _ in runs]).astype(np.float64)
    d = periods - periods.mean()
    lag1 = float((d[1:] * d[:-1]).sum() / (d * d).sum())
    cells = []
    for length in lengths:
        for precision in (0.5, 1.0):
            for mean_only in (True, False):
                hits, errs, detailed = [], [], []
                for ends, refs in runs:
                    for off in range(total - length + 1):
                        start = ends[off - 1] if off else 0
                        win = ends[off : off + length] - start
                        est, lo, hi, det = _sample_window(win, refs, k, precision / 100, mean_only)
                        if det == length:  # replayed whole: nothing to cover
                            continue
                        truth = int(win[-1])
                        hits.append(lo <= truth <= hi)
                        errs.append(abs(est / truth - 1.0) * 100.0)
                        detailed.append(det)
                cells.append(
                    {
                        "iterations": length,
                        "precision_pct": precision,
                        "interval": "mean" if mean_only else "prediction",
                        "windows": len(hits),
                        # None where the rule replayed every window whole
                        "coverage": round(float(np.mean(hits)), 3) if hits else None,
                        "max_abs_error_pct": round(max(errs), 2) if errs else None,
                        "mean_detailed": round(float(np.mean(detailed)), 1) if hits else None,
                    }
                )
    return {
        "bench": "sampling-coverage",
        "workload": f"heat nx={heat['nx']} ny={heat['ny']}, windows of {total}",
        "scheduler": "ws",
        "seeds": list(seeds),
        "samples": k,
        "cells": cells,
        "lag1_autocorrelation": round(lag1, 3),
        "loadavg_1m": load,
    }


RECORDS = Path(__file__).resolve().parents[1] / "experiments" / "laws" / "published-records"


def _seed0_rows(folder: Path) -> dict[tuple[str, str], dict]:
    """The seed-0 rows of a records folder (``*/row.json``), by (workload, scheduler)."""
    from simsched.errors import ConfigError

    rows = {}
    for path in sorted(folder.glob("*/row.json")):
        row = json.loads(path.read_text())
        if row.get("seed") == 0 and row.get("status", "ok") == "ok":
            rows[(row["workload"], row["scheduler"])] = row
    if not rows:
        raise ConfigError(f"{folder}: no seed-0 rows (*/row.json) in it")
    return rows


def _ends(row: dict) -> np.ndarray:
    ends = row["iteration_ends"]
    return np.asarray(json.loads(ends) if isinstance(ends, str) else ends, dtype=np.int64)


def rules(
    detailed: Path, sampled: Path, ks: list[int], precisions: list[float], window: int
) -> dict:
    """The sampling rule's settings replayed on detailed runs (see the module docstring)."""
    from simsched.engine.sampled import resample
    from simsched.errors import ConfigError
    from simsched.stats import interval_ends

    det, samp = _seed0_rows(detailed), _seed0_rows(sampled)
    # each detailed run's iteration ends, read once for every setting and window below
    run_ends = {key: _ends(row) for key, row in det.items()}
    pairs = sorted(k for k in det if k in samp and len(run_ends[k]))
    if not pairs:
        raise ConfigError(f"{detailed}, {sampled}: no program with a detailed and a sampled row")
    reproduced = []
    for key in pairs:
        d, s = det[key], samp[key]
        got = resample(
            run_ends[key],
            s["settled_at"],
            s["sample_iterations"],
            s["sample_precision"],
            epilogue_cycles=d["epilogue_cycles"],
        )
        est = got.estimate
        same = [est.makespan, est.lo, est.hi, got.detailed] == [
            s["makespan_cycles"],
            *(interval_ends(s["makespan_ci95"]) or ()),
            s["detailed_iterations"],
        ]
        reproduced.append(same)
    cells = []
    for sched in sorted({s for _, s in pairs}):
        progs = [key for key in pairs if key[1] == sched]
        for precision in precisions:
            for k in ks:
                misses, errs, det_its = [], [], []
                w_hits, w_errs, w_det = [], [], []
                for key in progs:
                    ends, truth = run_ends[key], det[key]["makespan_cycles"]
                    epi = det[key]["epilogue_cycles"]
                    got = resample(ends, samp[key]["settled_at"], k, precision, epilogue_cycles=epi)
                    e = got.estimate
                    if not e.lo <= truth <= e.hi:
                        misses.append(key[0])
                    errs.append(100.0 * (e.makespan / truth - 1.0))
                    det_its.append(got.detailed)
                    for off in range(1, len(ends) - window + 1, 5):
                        win = ends[off : off + window] - ends[off - 1]
                        got = resample(win, 3, k, precision)
                        if not got.sampled:  # replayed whole: nothing to cover
                            continue
                        e, end = got.estimate, int(win[-1])
                        w_hits.append(e.lo <= end <= e.hi)
                        w_errs.append(abs(100.0 * (e.makespan / end - 1.0)))
                        w_det.append(got.detailed)
                cells.append(
                    {
                        "scheduler": sched,
                        "precision_pct": precision,
                        "samples": k,
                        "programs": len(progs),
                        "outside_ci95": misses,
                        "max_abs_error_pct": round(max(abs(x) for x in errs), 2),
                        "detailed_iterations": sum(det_its),
                        "iterations": int(sum(len(run_ends[p]) for p in progs)),
                        "windows": len(w_hits),
                        "window_coverage": round(float(np.mean(w_hits)), 3) if w_hits else None,
                        "window_max_abs_error_pct": round(max(w_errs), 2) if w_errs else None,
                        "window_mean_detailed": round(float(np.mean(w_det)), 1) if w_det else None,
                    }
                )
    return {
        "bench": "sampling-rules",
        "detailed": detailed.name,
        "sampled": sampled.name,
        "pairs": len(pairs),
        "reproduced": sum(reproduced),
        "window": window,
        "cells": cells,
    }


def _numbers(kind: type):  # type: ignore[no-untyped-def]
    """An argparse type: comma-separated positive numbers of ``kind``."""

    def parse(text: str) -> list:
        try:
            out = [kind(v) for v in text.split(",")]
        except ValueError:
            out = []
        if not out or min(out) <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a list of positive numbers")
        return out

    return parse


def _lengths(text: str) -> tuple[int, ...]:
    """``--windows``: comma-separated positive integers."""
    try:
        out = tuple(int(w) for w in text.split(","))
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of window lengths")
    return out


def main() -> None:
    """Run the benchmark and print its JSON line."""
    from _bench import emit

    import simsched
    from simsched.workloads import generate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=60, help="iterations of the heat trace")
    ap.add_argument("--samples", type=int, default=5, help="--sample-iterations K")
    ap.add_argument("--scheduler", default="laws")
    ap.add_argument("--precision", type=float, default=0.5, help="--sample-precision (%%)")
    ap.add_argument("--study", help="validate on every workload of this sweep spec instead")
    ap.add_argument("--schedulers", default="ws,laws", help="with --study: comma-separated")
    ap.add_argument("--traces", default="results/traces", help="with --study: trace folder")
    ap.add_argument("--coverage", action="store_true", help="interval coverage over WS windows")
    ap.add_argument("--total", type=int, default=100, help="with --coverage: iterations replayed")
    ap.add_argument(
        "--windows",
        type=_lengths,
        default=(20, 60),
        help="with --coverage: window lengths, comma-separated",
    )
    ap.add_argument("--nx", type=int, default=HEAT["nx"], help="rows of the heat (with boundary)")
    ap.add_argument("--rules", action="store_true", help="settings replayed on detailed runs")
    ap.add_argument("--detailed", type=Path, default=RECORDS / "stencils-detailed")
    ap.add_argument("--sampled", type=Path, default=RECORDS / "rerun-2026-12-02")
    ap.add_argument("--ks", type=_numbers(int), default=[5, 10, 20], help="with --rules")
    ap.add_argument("--precisions", type=_numbers(float), default=[1.0, 0.5], help="with --rules")
    ap.add_argument("--window", type=int, default=100, help="with --rules: window length")
    a = ap.parse_args()
    if a.rules:
        if a.window < max(a.ks) + 4:
            ap.error("--window must be >= the largest of --ks + 4")
        out, cpu, wall = _timed(lambda: rules(a.detailed, a.sampled, a.ks, a.precisions, a.window))
        emit({**out, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)})
        return
    heat = {**HEAT, "nx": a.nx}
    if a.coverage:
        if min(a.windows) < a.samples + 4 or max(a.windows) > a.total:
            ap.error("--windows: each length must be >= --samples + 4 and <= --total")
        out, cpu, wall = _timed(lambda: coverage(a.samples, heat, a.total, lengths=a.windows))
        emit({**out, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)})
        return
    if a.study:
        out, cpu, wall = _timed(
            lambda: study(a.study, a.schedulers.split(","), a.samples, a.precision, a.traces)
        )
        emit({**out, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)})
        return
    load = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "heat.sst"
        generate("heat", trace, **{**heat, "iters": a.iters})

        def run(k: int | None) -> dict:
            return simsched.run(
                trace,
                MACHINE,
                a.scheduler,
                overrides=OVERRIDES,
                speedup=False,
                sample_iterations=k,
                sample_precision=None if k is None else a.precision,
            ).record

        _warm_up(MACHINE, [a.scheduler], OVERRIDES)
        full, cpu_full, wall_full = _timed(lambda: run(None))
        samp, cpu_samp, wall_samp = _timed(lambda: run(a.samples))
    lo, hi = json.loads(samp["makespan_ci95"])
    err = 100.0 * (samp["makespan_cycles"] / full["makespan_cycles"] - 1.0)
    out = {
        "bench": "sampling",
        "workload": f"heat nx={a.nx} ny={HEAT['ny']} iters={a.iters}",
        "machine": f"{MACHINE} caches/64",
        "scheduler": a.scheduler,
        "samples": a.samples,
        "sampled": samp["sampled"],
        "settled_at": samp["settled_at"],
        "detailed_iterations": samp["detailed_iterations"],
        "makespan_detailed": full["makespan_cycles"],
        "makespan_sampled": samp["makespan_cycles"],
        "error_pct": round(err, 3),
        "detailed_in_ci95": bool(lo <= full["makespan_cycles"] <= hi),
        "cpu_detailed_s": round(cpu_full, 2),
        "cpu_sampled_s": round(cpu_samp, 2),
        "cpu_speedup": round(cpu_full / cpu_samp, 2),
        "wall_detailed_s": round(wall_full, 2),
        "wall_sampled_s": round(wall_samp, 2),
        "loadavg_1m": load,
        "target_error_pct": TARGET_ERROR_PCT,
        "target_cpu_speedup": TARGET_CPU_SPEEDUP,
        "ok": bool(abs(err) <= TARGET_ERROR_PCT and cpu_full / cpu_samp >= TARGET_CPU_SPEEDUP),
    }
    emit(out)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
