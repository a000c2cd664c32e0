"""The result record: one flat, JSON-able dict per run (docs/architecture.md §4.5, docs/results.md).

Flat so that a set of records is a table (one Parquet row per run).  Everything in it
is a function of the trace, the machine, the scheduler, its parameters, the seed and the
simsched version, except ``wall_s``: two runs with the same inputs give identical records
apart from ``wall_s``.  Nested values (configs, parameters, per-node counters) are JSON
strings with sorted keys.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simsched import files
from simsched.canonical import canonical_json
from simsched.errors import PluginError

if TYPE_CHECKING:  # the record module is imported by the engine: types only
    from simsched.engine.outcome import EngineResult, ReplayResult
    from simsched.machine import Machine
    from simsched.trace import Trace, TraceHeader

RECORD_VERSION = 1


#: Record and point fields whose value is a list or mapping.  In JSON (``row.json``,
#: ``--json`` output, ``results show --format json``) they are JSON objects; in a table
#: (Parquet, CSV) they are canonical JSON text, one column each.
NESTED_FIELDS = frozenset(
    {
        "params",
        "machine_config",
        "trace_args",
        "dram_by_node",
        "dram_by_socket",
        "link_traffic",
        "scheduler_counters",
        "workload_params",
        "machine_overrides",
        "scheduler_params",
        # per-socket answers ([LAWS15] Table IV)
        "shared_misses_by_socket",
        "busy_by_socket",
        "finish_by_socket",
        # scheduler fields (Scheduler.record_fields)
        "iteration_cycles",
        "packing",
        "allocator_shares",
        "worker_cycles",
        "quantum_desires",
        "quantum_utilization",
        # steady-state sampling (docs/engine.md §7)
        "makespan_ci95",
        "iteration_ends",
        "baseline_makespan_ci95",
        "speedup_ci95",
        # multi-job records (simsched run --jobs)
        "jobs",
        "allotment",
        "realloc_warmup",
        "controller_params",
        # what a comparison would otherwise hide (simsched.comparison)
        "warnings",
    }
)


def nest_fields(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its nested fields (also ``run.<field>``) as objects, not JSON text."""
    out = dict(record)
    for key, value in record.items():
        if key.removeprefix("run.") in NESTED_FIELDS and isinstance(value, str):
            try:
                out[key] = json.loads(value)
            except ValueError:
                pass  # not JSON after all (e.g. an error row's text): keep it
    return out


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces) used for the nested fields of a record."""
    return canonical_json(obj, strict=True)


def memory_fields(mem_stats: dict, makespan: int, instructions: int) -> dict[str, Any]:
    """Cache, DRAM and controller fields of a record from ``MemorySystem.stats()``."""
    out: dict[str, Any] = {}
    for lv in mem_stats["levels"]:
        n = lv["name"]
        for f in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            out[f"{n}_{f}"] = int(lv[f])
    last = mem_stats["levels"][-1]
    out["last_level"] = last["name"]
    out["mpki"] = 1000.0 * last["misses"] / instructions if instructions else 0.0
    out["offchip_bytes"] = int(mem_stats["offchip_bytes"])
    nodes = mem_stats["nodes"]
    busy = sum(int(nd["busy_cycles"]) for nd in nodes)
    out["mem_utilization"] = busy / (len(nodes) * makespan) if makespan and nodes else 0.0
    out["dram_local"] = sum(int(nd["local"]) for nd in nodes)
    out["dram_remote"] = sum(int(nd["remote"]) for nd in nodes)
    out["dram_writebacks"] = sum(int(nd["writebacks"]) for nd in nodes)
    out["queue_delay_cycles"] = sum(int(nd["queue_delay"]) for nd in nodes)
    out["dram_by_node"] = dumps(
        [{k: int(nd[k]) for k in ("local", "remote", "writebacks", "busy_cycles")} for nd in nodes]
    )
    if "links" in mem_stats:
        # Only machines with socket links have the field: records without stay as they were.
        out["link_traffic"] = dumps(
            [
                {
                    "from": ln["from"],
                    "to": ln["to"],
                    "lines": ln["lines"],
                    "utilization": ln["busy_cycles"] / makespan if makespan else 0.0,
                    "queue_delay": ln["queue_delay"],
                }
                for ln in mem_stats["links"]
            ]
        )
    if "prefetch" in mem_stats:
        # Only machines with a prefetcher have these fields (docs/machine-model.md §6.2).
        for f in ("issued", "useful", "late", "useless"):
            out[f"prefetch_{f}"] = int(mem_stats["prefetch"][f])
    sockets = mem_stats.get("sockets", [])
    out["dram_by_socket"] = dumps(
        [{"local": int(s["mem_local"]), "remote": int(s["mem_remote"])} for s in sockets]
    )
    return out


def metrics(
    engine_result: EngineResult, mem_stats: dict, machine: Machine, header: TraceHeader
) -> dict[str, Any]:
    """Metrics of one replay as flat record fields (see docs/results.md).

    Parameters
    ----------
    engine_result
        The :class:`simsched.engine.outcome.EngineResult`.
    mem_stats
        ``MemorySystem.stats()`` after the replay.
    machine
        The machine.
    header
        The trace header.
    """
    r = engine_result
    out: dict[str, Any] = {}
    makespan = int(r.makespan)
    instructions = int(header.n_instructions)
    out["makespan_cycles"] = makespan
    out["instructions"] = instructions
    out["refs"] = int(header.n_refs)
    out["strands"] = int(header.n_strands)
    out.update(memory_fields(mem_stats, makespan, instructions))
    out["steal_attempts"] = int(r.counters.get("steal_attempts", 0))
    out["steals"] = int(r.counters.get("steals", 0))
    out["scheduler_counters"] = dumps({k: int(v) for k, v in sorted(r.counters.items())})
    out["busy_cycles"] = int(r.busy_cycles.sum())
    out["sched_cycles"] = int(r.sched_cycles.sum())
    out["idle_cycles"] = int(r.idle_cycles.sum())
    out["utilization"] = out["busy_cycles"] / (machine.cores * makespan) if makespan else 0.0
    out["private_misses"] = int(r.private_misses.sum())
    out.update(socket_fields(r, mem_stats, machine))
    return out


#: Fields a job-set record's job entry gets after :func:`jobs_metrics` (its scheduler,
#: resolved parameters and trace path, set by :func:`simsched.run_jobs`).
JOB_ENTRY_LATE_FIELDS = ("scheduler", "params", "trace", "realloc_warmup")


def scheduler_fields(
    fields: dict[str, Any], taken: Collection[str], who: str, flat: bool = True
) -> dict[str, Any]:
    """A scheduler's :meth:`~simsched.schedulers.base.Scheduler.record_fields`, ready for
    its record (``flat``: nested values as JSON text, as tables hold them).

    Raises
    ------
    PluginError
        A name among ``taken`` (the record's own fields, those set before and after these),
        naming ``who``: a plug-in's ``seed`` or ``status`` replaced the run's own without
        a word, and ``scheduler`` made the record name no scheduler at all.
    """
    for k in fields:
        if k in taken:
            raise PluginError(
                f"{who}: record_fields() gives {k!r}, a field the record has already; give "
                "it another name"
            )
    if not flat:
        return dict(fields)
    return {k: dumps(v) if isinstance(v, dict | list | tuple) else v for k, v in fields.items()}


def socket_fields(engine_result: EngineResult, mem_stats: dict, machine: Machine) -> dict[str, Any]:
    """Per-socket answers and the straggler socket ([LAWS15] §6.2, Table IV).

    The straggler socket is the one whose cores spent the most cycles running strands:
    the socket that takes longest over its share of the work.  (Which socket's last
    strand ends last says little in an iterative program: every iteration ends with a
    sync whose post-sync strand runs wherever the last child finished.)  Ties go to the
    lowest socket.

    Parameters
    ----------
    engine_result
        The :class:`simsched.engine.outcome.EngineResult` (per-core busy cycles, the core
        and end of every strand).
    mem_stats
        ``MemorySystem.stats()`` after the replay.
    machine
        The machine.

    Returns
    -------
    dict
        ``shared_level`` (name of the first level shared by a socket, empty if none),
        ``shared_misses_by_socket``, ``busy_by_socket``, ``finish_by_socket`` (JSON
        lists), ``straggler_socket`` and its ``straggler_busy_cycles``,
        ``straggler_shared_misses``, ``straggler_dram_local``, ``straggler_dram_remote``.
    """
    r = engine_result
    S = int(machine.sockets)
    sock = np.array([machine.socket_of(c) for c in range(machine.cores)], dtype=np.int64)
    busy = np.bincount(sock, weights=np.asarray(r.busy_cycles, dtype=np.float64), minlength=S)
    busy = busy.astype(np.int64)
    finish = np.zeros(S, dtype=np.int64)
    core = np.asarray(r.strand_core)
    if core.size:
        np.maximum.at(finish, sock[core], np.asarray(r.strand_end, dtype=np.int64))
    shared = next((lv for lv in mem_stats["levels"] if lv["scope"] == "socket"), None)
    misses = [int(i["misses"]) for i in shared["instances"][:S]] if shared else [0] * S
    sockets = mem_stats.get("sockets", [])
    local = [int(x["mem_local"]) for x in sockets] or [0] * S
    remote = [int(x["mem_remote"]) for x in sockets] or [0] * S
    k = int(np.argmax(busy)) if S else 0
    return {
        "shared_level": shared["name"] if shared else "",
        "shared_misses_by_socket": dumps(misses),
        "busy_by_socket": dumps(busy.tolist()),
        "finish_by_socket": dumps(finish.tolist()),
        "straggler_socket": k,
        "straggler_busy_cycles": int(busy[k]),
        "straggler_shared_misses": misses[k],
        "straggler_dram_local": local[k],
        "straggler_dram_remote": remote[k],
    }


def write_npz_atomic(path: Path, **arrays: np.ndarray) -> None:
    """Write arrays to an ``.npz`` file atomically (no pickled objects)."""
    with files.atomic_output(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, allow_pickle=False, **arrays)


def write_parquet_atomic(path: Path, records: list[dict[str, Any]]) -> None:
    """Write records as rows of a Parquet file atomically (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(records)
    with files.atomic_output(path) as tmp:
        pq.write_table(table, tmp)


def jobs_metrics(
    result: ReplayResult, mem_stats: dict, machine: Machine, traces: list[Trace]
) -> dict[str, Any]:
    """Metrics of a multi-job replay (docs/results.md, "Multi-job records").

    Parameters
    ----------
    result
        The :class:`simsched.engine.outcome.ReplayResult`.
    mem_stats
        ``MemorySystem.stats()`` after the replay.
    machine
        The machine.
    traces
        The jobs' traces, in job order (their headers give digests and counts).

    Returns
    -------
    dict
        Flat totals (makespan, mean response time, utilisation, reallocations, cache
        levels, DRAM) plus ``jobs`` (one dict per job), ``allotment`` (the series) and
        ``realloc_warmup`` (the cache cost of moving cores between jobs).
    """
    r = result
    out: dict[str, Any] = {}
    jobs: list[dict[str, Any]] = []
    for j, t in zip(r.jobs, traces, strict=True):
        useful = int(j.busy_cycles)
        jobs.append(
            {
                "name": j.name,
                "trace_digest": t.header.digest,
                "trace_program": t.header.program,
                "arrival": int(j.arrival),
                "start": int(j.start),
                "finish": int(j.finish),
                "response_cycles": int(j.finish - j.arrival),
                "instructions": int(j.instructions),
                "refs": int(j.refs),
                "strands": int(len(j.strand_core)),
                "useful_cycles": useful,
                "sched_cycles": int(j.sched_cycles),
                "allotted_cycles": int(j.allotted_cycles),
                "utilization": useful / j.allotted_cycles if j.allotted_cycles else 0.0,
                "steal_attempts": int(j.counters.get("steal_attempts", 0)),
                "steals": int(j.counters.get("steals", 0)),
                "core_moves": int(j.core_moves),
                "move_cycles": int(j.move_cycles),
                "scheduler_counters": {k: int(v) for k, v in sorted(j.counters.items())},
            }
        )
        taken = {*jobs[-1], *JOB_ENTRY_LATE_FIELDS}
        jobs[-1].update(
            scheduler_fields(j.sched_fields, taken, f"scheduler of job {j.name!r}", flat=False)
        )
    makespan = int(r.makespan)
    out["makespan_cycles"] = makespan
    out["n_jobs"] = len(jobs)
    out["mean_response_cycles"] = float(np.mean([x["response_cycles"] for x in jobs]))
    useful = sum(x["useful_cycles"] for x in jobs)
    allotted = sum(x["allotted_cycles"] for x in jobs)
    out["useful_cycles"] = useful
    out["allotted_cycles"] = allotted
    out["utilization"] = useful / allotted if allotted else 0.0
    out["machine_utilization"] = useful / (machine.cores * makespan) if makespan else 0.0
    out["reallocations"] = int(r.reallocations)
    out["core_moves"] = int(r.core_moves)
    out["move_cycles"] = int(r.move_cycles)
    out["instructions"] = sum(x["instructions"] for x in jobs)
    out["refs"] = sum(x["refs"] for x in jobs)
    out.update(memory_fields(mem_stats, makespan, out["instructions"]))
    out["private_misses"] = int(r.private_misses.sum())
    w = r.warmup
    out["realloc_warmup"] = {k: v for k, v in w.items() if k != "jobs"}
    for x, wj in zip(jobs, w["jobs"], strict=True):
        x["realloc_warmup"] = wj
    out["allotment"] = {
        "cycles": [int(e[0]) for e in r.series],
        "cores": [list(map(int, e[1])) for e in r.series],
        "desire": [list(map(int, e[2])) for e in r.series],
        "leaving": [list(map(int, e[3])) for e in r.series],
    }
    out["jobs"] = jobs
    return out


def jobs_timeline_arrays(
    result: ReplayResult, traces: list[Trace], machine: Machine
) -> dict[str, np.ndarray]:
    """``timeline.npz`` of a multi-job run: every job's strands, one row each.

    Returns
    -------
    dict
        Per strand (jobs one after the other) ``job``, ``strand`` (its number in its
        job's trace), ``core``, ``start``, ``end``, ``frame`` and the memory counters of
        :data:`simsched.engine.outcome.STRAND_MEM_FIELDS`; ``socket_of_core`` and
        ``makespan`` as in a single run's.
    """
    parts: dict[str, list[np.ndarray]] = {}
    for j, t in zip(result.jobs, traces, strict=True):
        n = len(j.strand_core)
        cols = {
            "job": np.full(n, j.jid, dtype=np.int64),
            "strand": np.arange(n, dtype=np.int64),
            "core": j.strand_core,
            "start": j.strand_start,
            "end": j.strand_end,
            "frame": np.asarray(t.strands.frame, dtype=np.int64),
            **j.strand_mem,
        }
        for k, v in cols.items():
            parts.setdefault(k, []).append(np.asarray(v, dtype=np.int64))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    out["socket_of_core"] = np.array(
        [machine.socket_of(c) for c in range(machine.cores)], dtype=np.int64
    )
    out["makespan"] = np.array([result.makespan], dtype=np.int64)
    return out
