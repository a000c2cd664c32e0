"""Facts about a job's trace on the run's machine, measured by the engine for its scheduler.

Design
------
Some policies need a measurement of the whole program before they can decide anything:
CAB's Eq. 4 takes the data size ``Sd`` and, for the CPU-bound rule, the miss intensity of
a one-core run ([CAB11] §III-B, §V-D; :mod:`simsched.schedulers.boundary`).  Those
measurements replay or scan the trace, which is engine and memory-model work, so a
scheduler does not make them: it names what it needs
(:meth:`simsched.schedulers.base.Scheduler.wanted_facts`) and reads the values from
``ctx.facts``, a :class:`TraceFacts` the engine builds per job.

* **Before the event loop.**  :class:`~simsched.engine.replay.Replay` asks every job's
  scheduler class what it wants and calls :meth:`TraceFacts.prepare` when the replay is
  built, so a job arriving in the middle of a run constructs its scheduler from values
  already at hand and no measurement is counted as control time.
* **Cached.**  Each value is computed once per process and object (memoised) and once per
  content on disk, under ``$SIMSCHED_CACHE_DIR/cab/``: the footprint by trace digest, the
  intensity by trace digest, the one-core machine's configuration (scheduling costs and
  names removed: they do not change a serial replay's misses) and the timing model's code
  (:func:`simsched.identity.timing_model_identity`, as for the one-core baselines: the
  misses are the memory model's, so an edited model never reads an older model's value).
  Files are written atomically; a file of another :data:`MEASURE_VERSION` is computed
  again.

The facts (names are what :meth:`Scheduler.wanted_facts` returns):

``footprint_bytes``
    Distinct lines (of the trace's line-size hint) the references touch, times the line
    size — what ``simsched trace info`` prints.  One pass over the references.
``one_core_miss_intensity``
    ``{"misses", "instructions", "intensity"}`` of a serial replay of the references on the
    one-core version of the machine (:func:`simsched.machine.loader.one_core_machine`), the
    misses being those of the last private (``core``-scope) level, as
    :meth:`Scheduler.on_profile` reports them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from simsched.canonical import canonical_json
from simsched.errors import ConfigError
from simsched.files import cache_dir, cache_output, write_json_atomic
from simsched.machine.loader import machine_config, one_core_machine

#: Version of the cached measurements (bump when their definition changes).
MEASURE_VERSION = 2

#: The facts a scheduler may ask for.
FACT_NAMES = ("footprint_bytes", "one_core_miss_intensity")


def _cached_json(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``compute()`` once per cache file: read ``path`` if it holds this version, else write it."""
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("version") == MEASURE_VERSION:
            return data
    except (OSError, ValueError):
        pass
    data = {**compute(), "version": MEASURE_VERSION}
    with cache_output():
        write_json_atomic(path, data)
    return data


def trace_footprint_bytes(trace: Any) -> int:
    """The trace's data footprint in bytes, cached per trace digest.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace`.

    Returns
    -------
    int
        Bytes (kept in ``$SIMSCHED_CACHE_DIR/cab/footprint-<digest>.json``).
    """
    from simsched.trace.analysis import summary

    path = cache_dir("cab", f"footprint-{trace.header.digest[:32]}.json")
    data = _cached_json(path, lambda: {"footprint_bytes": int(summary(trace)["footprint_bytes"])})
    return int(data["footprint_bytes"])


def one_core_miss_intensity(trace: Any, machine: Any) -> dict[str, Any]:
    """Miss intensity of a one-core run of ``trace`` on ``machine``, cached on disk.

    Parameters
    ----------
    trace
        An open :class:`simsched.trace.Trace` (read again by path).
    machine
        The machine of the run.

    Returns
    -------
    dict
        ``misses``, ``instructions`` and ``intensity`` (misses per instruction); kept in
        ``$SIMSCHED_CACHE_DIR/cab/intensity-<digest>-<key>.json`` (the key: the one-core
        machine and the timing model's code).
    """
    from simsched.identity import timing_model_identity
    from simsched.memory.replay import replay_trace

    m1 = one_core_machine(machine)
    cfg = machine_config(m1)
    cfg.pop("costs", None)  # scheduling costs do not change a serial replay's misses
    cfg.pop("name", None)
    cfg.pop("description", None)
    key = canonical_json(cfg, strict=True) + f"|code:{timing_model_identity()}"
    mkey = hashlib.sha256(key.encode()).hexdigest()[:20]
    path = cache_dir("cab", f"intensity-{trace.header.digest[:32]}-{mkey}.json")

    def compute() -> dict[str, Any]:
        st = replay_trace(m1, trace.path)
        private = [lv for lv in st["levels"] if lv["scope"] == "core"]
        misses = int(private[-1]["misses"]) if private else int(st["refs"])
        # Lines a prefetcher brought from beyond the private levels are misses a hardware
        # counter sees too (docs/schedulers.md, profiling).
        misses += int(st.get("prefetch", {}).get("beyond", 0))
        instr = max(int(trace.header.n_instructions), 1)
        return {"misses": misses, "instructions": instr, "intensity": misses / instr}

    return _cached_json(path, compute)


class TraceFacts:
    """The facts about one job's trace on the run's machine (``ctx.facts`` of its scheduler).

    Parameters
    ----------
    trace
        The job's open trace.
    machine
        The run's machine.
    """

    def __init__(self, trace: Any, machine: Any) -> None:
        self.trace = trace
        self.machine = machine
        self._memo: dict[str, Any] = {}

    def prepare(self, names: Iterable[str]) -> None:
        """Compute the named facts now (the engine calls this before its event loop).

        Raises
        ------
        ConfigError
            A name is not one of :data:`FACT_NAMES`.
        """
        for name in names:
            if name not in FACT_NAMES:
                raise ConfigError(
                    f"unknown scheduler fact {name!r} (known: {', '.join(FACT_NAMES)})"
                )
            getattr(self, name)()

    def footprint_bytes(self) -> int:
        """The trace's data footprint in bytes (:func:`trace_footprint_bytes`)."""
        if "footprint_bytes" not in self._memo:
            self._memo["footprint_bytes"] = trace_footprint_bytes(self.trace)
        return int(self._memo["footprint_bytes"])

    def one_core_miss_intensity(self) -> dict[str, Any]:
        """Misses, instructions and their ratio on one core (:func:`one_core_miss_intensity`)."""
        if "one_core_miss_intensity" not in self._memo:
            self._memo["one_core_miss_intensity"] = one_core_miss_intensity(
                self.trace, self.machine
            )
        return dict(self._memo["one_core_miss_intensity"])
