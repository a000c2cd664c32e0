"""The result record: one flat, JSON-able dict per run (DESIGN.md §8, docs/results.md).

Flat so that a set of records is a table (one Parquet row per run).  Everything in it
is a function of the trace, the machine, the scheduler, its parameters, the seed and the
simsched version, except ``wall_s``: two runs with the same inputs give identical records
apart from ``wall_s``.  Nested values (configs, parameters, per-node counters) are JSON
strings with sorted keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from simsched import files

RECORD_VERSION = 1


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces) used for the nested fields of a record."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def metrics(engine_result: Any, mem_stats: dict, machine: Any, header: Any) -> dict[str, Any]:
    """Metrics of one replay as flat record fields (see docs/results.md).

    Parameters
    ----------
    engine_result
        The :class:`simsched.engine.replay.EngineResult`.
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
    sockets = mem_stats.get("sockets", [])
    out["dram_by_socket"] = dumps(
        [{"local": int(s["mem_local"]), "remote": int(s["mem_remote"])} for s in sockets]
    )
    out["steal_attempts"] = int(r.counters.get("steal_attempts", 0))
    out["steals"] = int(r.counters.get("steals", 0))
    out["scheduler_counters"] = dumps({k: int(v) for k, v in sorted(r.counters.items())})
    out["busy_cycles"] = int(r.busy_cycles.sum())
    out["sched_cycles"] = int(r.sched_cycles.sum())
    out["idle_cycles"] = int(r.idle_cycles.sum())
    out["utilization"] = out["busy_cycles"] / (machine.cores * makespan) if makespan else 0.0
    out["private_misses"] = int(r.private_misses.sum())
    return out


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (:func:`simsched.files.write_json_atomic`)."""
    files.write_json_atomic(path, obj)


def write_npz_atomic(path: Path, **arrays: np.ndarray) -> None:
    """Write arrays to an ``.npz`` file atomically (no pickled objects)."""
    with files.atomic_output(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)


def write_parquet_atomic(path: Path, records: list[dict[str, Any]]) -> None:
    """Write records as rows of a Parquet file atomically (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(records)
    with files.atomic_output(path) as tmp:
        pq.write_table(table, tmp)
