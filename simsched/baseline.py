"""The one-core baseline a run's ``speedup`` divides: its makespan, cached on disk.

``speedup`` compares with the same trace on a one-core version of the same machine (same
caches, memory and placement; scheduling costs zero; strands in serial order), the
sequential execution of [PDF07] §5.1.  That baseline is computed once per (trace digest,
machine, timing-model code) and cached in ``$SIMSCHED_CACHE_DIR/baselines`` (default
``~/.cache/simsched``), so a sweep of many schedulers on one trace replays it once.  It sits
below :mod:`simsched.api` (which calls it for every run) and above the engine, whose
protocol knows no policy: the serial order is PDF's on one core, so this module, not the
engine, names the scheduler.

A run sampled by iterations divides a baseline sampled the same way, so both makespans are
estimates; :func:`speedup_interval` combines their 95 % intervals into the speedup's
(docs/engine.md §7).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from simsched import identity
from simsched.engine.record import dumps
from simsched.engine.replay import DEFAULT_WINDOW, MAX_WINDOW, Engine
from simsched.engine.sampled import (
    PRECISION_UNSET,
    Unset,
    check_sampling,
    detailed_cpi,
    make_sampler,
    sampled_makespan,
    stop_hook,
)
from simsched.files import cache_dir, cache_output, write_json_atomic
from simsched.machine.loader import check_machine, machine_config, one_core_machine
from simsched.params import check_int
from simsched.stats import log_half_width
from simsched.trace.reader import as_trace

if TYPE_CHECKING:
    from simsched.machine import Machine
    from simsched.trace import Trace

__all__ = [
    "BASELINE_VERSION",
    "Baseline",
    "baseline_estimate",
    "baseline_makespan",
    "baseline_path",
    "speedup_interval",
]

#: Version of a cached baseline's file (a new one ignores the old files).  2: the file keeps
#: the baseline's 95 % interval (``makespan_ci95``) and whether it was ``sampled``.
BASELINE_VERSION = 2


@dataclass(frozen=True)
class Baseline:
    """The one-core baseline of a trace on a machine.

    Attributes
    ----------
    makespan
        Cycles of the serial execution (the extrapolation, if ``sampled``).
    lo, hi
        Its 95 % prediction interval (the makespan twice when not ``sampled``).
    sampled
        Whether iterations were left out and extrapolated.
    """

    makespan: int
    lo: int
    hi: int
    sampled: bool


def baseline_path(
    trace_digest: str,
    machine: Machine,
    sample_iterations: int | None = None,
    sample_precision: float | None = None,
) -> Path:
    """File caching the one-core baseline of a trace (by digest) on a machine.

    The key is everything the baseline's makespan depends on: the trace (digest), the
    one-core machine, and the code of the timing model
    (:func:`simsched.identity.timing_model_identity`), so a change to the timing model can
    never return a stale baseline while a commit that leaves it alone keeps the cache; a
    sampled baseline (``sample_iterations``, ``sample_precision``) is cached apart from the
    detailed one.
    """
    m1 = one_core_machine(machine)
    mkey = hashlib.sha256(
        (
            dumps(machine_config(m1))
            + f"|v{BASELINE_VERSION}|code:{identity.timing_model_identity()}"
        ).encode()
    ).hexdigest()[:20]
    tail = f"-s{int(sample_iterations)}" if sample_iterations else ""
    if sample_iterations and sample_precision:
        # repr: the shortest text that reads back as the same float (":g" kept six
        # digits, and two precisions the sampler tells apart shared a file)
        tail += f"p{float(sample_precision)!r}"
    return cache_dir() / "baselines" / f"{trace_digest[:32]}-{mkey}{tail}.json"


def baseline_makespan(
    trace: str | os.PathLike | Trace,
    machine: Machine,
    *,
    window: int = DEFAULT_WINDOW,
    sample_iterations: int | None = None,
    sample_precision: float | None | Unset = PRECISION_UNSET,
) -> int:
    """Makespan of ``trace`` on the one-core version of ``machine``, cached on disk
    (:func:`baseline_estimate`'s ``makespan``; the parameters are its)."""
    return baseline_estimate(
        trace,
        machine,
        window=window,
        sample_iterations=sample_iterations,
        sample_precision=sample_precision,
    ).makespan


def baseline_estimate(
    trace: str | os.PathLike | Trace,
    machine: Machine,
    *,
    window: int = DEFAULT_WINDOW,
    sample_iterations: int | None = None,
    sample_precision: float | None | Unset = PRECISION_UNSET,
) -> Baseline:
    """The one-core baseline of ``trace`` on ``machine`` with its interval, cached on disk.

    Parameters
    ----------
    trace
        Path or open trace.
    machine
        The (multi-core) machine whose one-core version is the baseline.
    window
        Unused on one core (kept for the cache key's independence from it).
    sample_iterations, sample_precision
        Sample the baseline's iterations as :func:`simsched.run` does, with the same defaults
        (``sample_iterations`` None: replay all of them; ``sample_precision`` not given:
        :data:`DEFAULT_SAMPLE_PRECISION` %, 0 or None: exactly ``sample_iterations``;
        given without ``sample_iterations``: a :class:`ConfigError`).

    Returns
    -------
    Baseline
        Makespan in cycles of the serial execution (strands in serial order), and its
        95 % interval when sampled.
    """
    check_machine(machine)
    check_int("window", window, 0, MAX_WINDOW)
    sample_iterations, sample_precision = check_sampling(sample_iterations, sample_precision)
    t, owned = as_trace(trace, cache_chunks=4)
    try:
        m1 = one_core_machine(machine)
        path = baseline_path(t.header.digest, machine, sample_iterations, sample_precision)
        try:
            data = json.loads(path.read_text())
            made_for = (data["sample_iterations"], data["sample_precision"])
            if made_for == (int(sample_iterations or 0), float(sample_precision or 0.0)):
                lo, hi = (int(v) for v in data["makespan_ci95"])
                return Baseline(int(data["makespan_cycles"]), lo, hi, bool(data["sampled"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        from simsched.memory import MemorySystem
        from simsched.schedulers import get_scheduler

        mem = MemorySystem(m1)
        sampler = None
        if sample_iterations:
            sampler = make_sampler(t, sample_iterations, sample_precision, str(t.path))
        eng = Engine(
            t, m1, get_scheduler("pdf"), {}, 0, mem, window=0, stop_when=stop_hook(sampler)
        )
        res = eng.run()
        makespan = int(res.makespan)
        got = Baseline(makespan, makespan, makespan, False)
        if sampler is not None and sampler.stopped:
            est = sampled_makespan(sampler.outcome(), detailed_cpi(res, t))
            got = Baseline(est.makespan, est.lo, est.hi, True)
        with cache_output():
            write_json_atomic(
                path,
                {
                    "makespan_cycles": got.makespan,
                    "makespan_ci95": [got.lo, got.hi],
                    "sampled": got.sampled,
                    "trace_digest": t.header.digest,
                    "machine": m1.name,
                    "version": BASELINE_VERSION,
                    "simsched_version": identity.version(),
                    "timing_model": identity.timing_model_identity(),
                    "sample_iterations": int(sample_iterations or 0),
                    "sample_precision": float(sample_precision or 0.0),
                },
            )
        return got
    finally:
        if owned:
            t.close()


def speedup_interval(
    baseline: Baseline, makespan: int, lo: float, hi: float
) -> tuple[float, float]:
    """The 95 % interval of a run's ``speedup`` (``baseline.makespan / makespan``).

    The run's makespan (interval ``[lo, hi]``; the makespan twice for a detailed run) and
    the baseline's are independent estimates, so their intervals combine on the log scale,
    the half-widths' squares added (the normal approximation, as the paired ratios of
    :mod:`simsched.comparison` do).  Both detailed: the speedup twice.

    Returns
    -------
    tuple of float
        ``(lo, hi)``; ``(0.0, 0.0)`` for a makespan of 0, whose speedup is recorded as 0.
    """
    if makespan <= 0:
        return 0.0, 0.0
    ratio = baseline.makespan / makespan
    half = math.hypot(log_half_width(baseline.lo, baseline.hi), log_half_width(lo, hi))
    if half == 0.0:
        return ratio, ratio
    if math.isinf(half):
        return 0.0, math.inf
    return ratio * math.exp(-half), ratio * math.exp(half)
