"""A run's timeline as a Chrome trace-event file, for ui.perfetto.dev and chrome://tracing.

:func:`chrome_trace` turns a result folder (``simsched run --out``, ``run --jobs --out``,
or a point of ``compare --out``) into the trace-event JSON object format:

* one *process* per socket (per job and socket for a job set) and one *thread* per core
  in it, so Perfetto shows the cores grouped by socket (and job);
* one complete event (``ph: X``) per strand, named by its subtree and frame, with its
  cycles and memory counters (private and last-level misses, local and remote DRAM
  lines) as arguments;
* a flow (``ph: s``/``f``) from a strand to the strand it released on another core:
  ``steal`` for a spawned child or a continuation taken by another core, ``migration``
  for a post-sync strand that another core's last child released;
* counter tracks (``ph: C``) per socket: last-level misses, local and remote DRAM lines
  per time bucket (each strand's counts spread evenly over its run), and for a job set
  the cores each job holds.

Times are microseconds of simulated time at the machine's ``clock_ghz`` (1 GHz when the
machine has none); every slice also carries its exact ``start_cycle`` and ``cycles``.
Steal flows, subtree names and frame levels need the run's trace (found through
``config.json`` or ``point.json``, or given).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from simsched.errors import ConfigError, shown, spelled
from simsched.files import check_path, named_for, write_text_atomic
from simsched.trace.format import EDGE_JOIN

__all__ = ["FORMATS", "chrome_trace", "export_timeline"]

#: Accepted ``--format`` names: both write the trace-event JSON that Perfetto and
#: chrome://tracing open.
FORMATS = ("perfetto", "chrome")

#: Time buckets of the counter tracks.
COUNTER_BUCKETS = 400

# Per-strand memory counters in timeline.npz and their counter-track names.
_MEM = ("private_misses", "llc_misses", "dram_local", "dram_remote")


def _releases(trace: Any, core: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per strand released on another core than its releaser: (releaser, strand, edge kind).

    The releaser of a strand is the predecessor that finished last (its completion made
    the strand ready, docs/architecture.md §4.3).
    """
    src = np.asarray(trace.edges.src, dtype=np.int64)
    dst = np.asarray(trace.edges.dst, dtype=np.int64)
    kind = np.asarray(trace.edges.kind, dtype=np.int64)
    if not len(src):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    order = np.lexsort((end[src], dst))  # by destination, then by the source's end
    last = np.r_[dst[order][1:] != dst[order][:-1], True]
    pick = order[last]
    src, dst, kind = src[pick], dst[pick], kind[pick]
    moved = core[src] != core[dst]
    return src[moved], dst[moved], kind[moved]


def _rates(start: np.ndarray, end: np.ndarray, counts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts per bucket ``[edges[k], edges[k+1])``, each strand's spread evenly over it."""
    dur = np.maximum(end - start, 1)
    end = start + dur  # a zero-length strand's counts fall in its one cycle
    rate = counts / dur.astype(np.float64)

    def area(t: np.ndarray, at: np.ndarray) -> np.ndarray:
        # sum over strands with at < t of rate * (t - at)
        o = np.argsort(at, kind="stable")
        a, r = at[o].astype(np.float64), rate[o]
        cr = np.r_[0.0, np.cumsum(r)]
        cra = np.r_[0.0, np.cumsum(r * a)]
        i = np.searchsorted(a, t, side="left")
        return t * cr[i] - cra[i]

    cum = area(edges.astype(np.float64), start) - area(edges.astype(np.float64), end)
    return np.diff(cum)


def chrome_trace(result: str | os.PathLike, trace: str | os.PathLike | None = None) -> dict:
    """The trace-event JSON object of one run (see the module docstring).

    Parameters
    ----------
    result
        A result folder with ``result.json`` and ``timeline.npz``, or that
        ``result.json``.
    trace
        The run's trace (single runs); default: the one its ``config.json`` or
        ``point.json`` names, when it still exists.

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``.

    Raises
    ------
    ConfigError
        No result or timeline there, a failed run, a timeline without per-strand counters
        (written by an older simsched: run again), or a trace that is not the run's.
    """
    from simsched.plotting.runfolder import TIMELINE_FILE, check_frames, run_trace_paths
    from simsched.plotting.timeline import load_timeline, subtree_of_frames
    from simsched.trace import open_trace

    result = check_path(result, "result")
    if trace is not None:
        trace = check_path(trace, "trace")
    arrays, record = load_timeline(result)
    missing = [k for k in _MEM if k not in arrays]
    if missing:
        raise ConfigError(
            f"{result}: the timeline has no per-strand {missing[0]} (written by an older "
            "simsched); run it again"
        )
    folder = Path(result) if Path(result).is_dir() else Path(result).parent
    jobs = record.get("jobs") if record.get("kind") == "jobs" else None
    names = [j["name"] for j in jobs] if jobs else [str(record.get("trace_program", "run"))]
    digests = [j.get("trace_digest") for j in jobs] if jobs else [record.get("trace_digest")]
    paths: list[Path | None] = run_trace_paths(folder, len(names))
    if trace is not None:
        if jobs:
            raise ConfigError(
                spelled(f"trace={str(trace)!r}: applies", "--trace applies")
                + " to single runs; a job set's config names its traces"
            )
        paths = [Path(trace)]
    mc = record.get("machine_config") or {}  # parsed and checked by load_timeline
    ghz = float(mc.get("clock_ghz") or 1.0)
    tl = _Timeline(arrays, ghz)
    events = tl.tracks(names if jobs else None)
    traced = []
    for j in range(len(names)):
        mine = np.flatnonzero(tl.job == j)
        sub = np.full(len(mine), -1, np.int64)
        moved = (np.zeros(0, np.int64),) * 3
        path = paths[j] if j < len(paths) else None
        if path is not None:
            with open_trace(path) as tr:
                if digests[j] is not None and tr.header.digest != digests[j]:
                    if trace is not None:
                        given = spelled(f"trace={str(trace)!r}", f"--trace {trace}")
                        raise ConfigError(f"{given}: not the run's trace (digest differs)")
                elif len(mine) != tr.header.n_strands:
                    # Release flows index the trace's strands by the timeline's rows.
                    raise ConfigError(
                        f"{folder / TIMELINE_FILE}: {len(mine)} strands of {names[j]}, but "
                        f"its trace {path} has {tr.header.n_strands}"
                    )
                else:
                    check_frames(
                        folder / TIMELINE_FILE, tl.frame[mine], len(tr.frames.parent), path
                    )
                    sub = subtree_of_frames(tr.frames.parent, tr.frames.level, None, tl.P)[
                        tl.frame[mine]
                    ]
                    row = np.empty(len(mine), np.int64)
                    row[tl.strand[mine]] = mine  # the row of each of the job's strands
                    src, dst, kinds = _releases(tr, tl.core[row], tl.end[row])
                    # no flow to or from a strand a sampled run did not replay
                    both = tl.replayed[row[src]] & tl.replayed[row[dst]]
                    moved = (row[src][both], row[dst][both], kinds[both])
                    traced.append(names[j])
        kept = tl.replayed[mine]
        events += tl.slices(j, mine[kept], sub[kept])
        events += tl.flows(j, *moved)
    events += tl.counters(str(record.get("last_level", "LLC")))
    if jobs:
        events += tl.allotment(record.get("allotment") or {}, names)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "program": str(record.get("trace_program", "")),
            "scheduler": str(record.get("scheduler", record.get("controller", ""))),
            "machine": str(record.get("machine", "")),
            "seed": str(record.get("seed", "")),
            "clock_ghz": ghz,
            "time": f"microseconds of simulated time at {ghz:g} GHz",
            "counter_bucket_cycles": tl.makespan / COUNTER_BUCKETS,
            "flows": tl.n_flows,
            "not_replayed": int((~tl.replayed).sum()),
            "traces_found": ", ".join(traced) or "none (no subtree names or steal flows)",
        },
    }


class _Timeline:
    """The events of one timeline: tracks (process per job and socket, thread per core)."""

    def __init__(self, arrays: dict[str, np.ndarray], ghz: float) -> None:
        self.us = 1.0 / (ghz * 1e3)  # microseconds per cycle
        self.sock = np.asarray(arrays["socket_of_core"], dtype=np.int64)
        self.S = int(self.sock.max()) + 1 if self.sock.size else 1
        self.P = len(self.sock)
        n = len(arrays["core"])
        self.job = np.asarray(arrays.get("job", np.zeros(n, np.int64)), dtype=np.int64)
        self.strand = np.asarray(arrays.get("strand", np.arange(n)), dtype=np.int64)
        self.core = np.asarray(arrays["core"], dtype=np.int64)
        self.start = np.asarray(arrays["start"], dtype=np.int64)
        self.end = np.asarray(arrays["end"], dtype=np.int64)
        self.frame = np.asarray(arrays["frame"], dtype=np.int64)
        from simsched.plotting.runfolder import not_replayed

        #: strands that have a core and times (a sampled run's extrapolated ones do not)
        self.replayed = ~not_replayed(arrays)
        self.mem = {k: np.asarray(arrays[k], dtype=np.int64) for k in _MEM}
        ms = arrays.get("makespan")
        self.makespan = (
            int(np.asarray(ms).ravel()[0]) if ms is not None else int(self.end.max(initial=0))
        )
        self.n_flows = 0

    def pid(self, j: int, s: int) -> int:
        return j * self.S + s + 1

    def where(self, j: int, c: int) -> dict[str, int]:
        """``pid`` and ``tid`` of core ``c``'s track in job ``j``."""
        return {"pid": self.pid(j, int(self.sock[c])), "tid": j * self.P + c + 1}

    def tracks(self, jobs: list[str] | None) -> list[dict[str, Any]]:
        """Names and order of the processes (socket, or job and socket) and threads (cores)."""
        out: list[dict[str, Any]] = []
        r = self.replayed
        pairs = zip(self.job[r].tolist(), self.core[r].tolist(), strict=True)
        used = sorted({(int(j), int(c)) for j, c in pairs})
        for j, s in sorted({(j, int(self.sock[c])) for j, c in used}):
            name = f"socket {s}" if jobs is None else f"job {jobs[j]} · socket {s}"
            p = self.pid(j, s)
            out.append({"ph": "M", "name": "process_name", "pid": p, "args": {"name": name}})
            out.append(
                {"ph": "M", "name": "process_sort_index", "pid": p, "args": {"sort_index": p}}
            )
        for j, c in used:
            w = self.where(j, c)
            out.append({"ph": "M", "name": "thread_name", **w, "args": {"name": f"core {c}"}})
            out.append({"ph": "M", "name": "thread_sort_index", **w, "args": {"sort_index": c}})
        return out

    def slices(self, j: int, rows: np.ndarray, sub: np.ndarray) -> list[dict[str, Any]]:
        """One complete event per strand of job ``j`` (``rows``), ``sub`` its subtree."""
        out = []
        for r, st in zip(rows.tolist(), sub.tolist(), strict=True):
            f = int(self.frame[r])
            t0, t1 = int(self.start[r]), int(self.end[r])
            out.append(
                {
                    "ph": "X",
                    "name": f"frame {f}" if st < 0 else f"subtree {st} · frame {f}",
                    "cat": "strand",
                    **self.where(j, int(self.core[r])),
                    "ts": t0 * self.us,
                    "dur": (t1 - t0) * self.us,
                    "args": {
                        "strand": int(self.strand[r]),
                        "frame": f,
                        "subtree": st,
                        "start_cycle": t0,
                        "cycles": t1 - t0,
                        **{k: int(self.mem[k][r]) for k in _MEM},
                    },
                }
            )
        return out

    def flows(
        self, j: int, src: np.ndarray, dst: np.ndarray, kinds: np.ndarray
    ) -> list[dict[str, Any]]:
        """A flow from each releasing strand to the strand it released on another core."""
        out = []
        for a, b, kind in zip(src.tolist(), dst.tolist(), kinds.tolist(), strict=True):
            what = "migration" if kind == EDGE_JOIN else "steal"
            self.n_flows += 1
            common = {"name": what, "cat": what, "id": self.n_flows}
            # the start binds to the enclosing slice: one cycle inside the releaser's end
            t_a = max(int(self.start[a]), int(self.end[a]) - 1) * self.us
            out.append({**common, "ph": "s", **self.where(j, int(self.core[a])), "ts": t_a})
            out.append(
                {
                    **common,
                    "ph": "f",
                    "bp": "e",
                    **self.where(j, int(self.core[b])),
                    "ts": int(self.start[b]) * self.us,
                }
            )
        return out

    def counters(self, last_level: str) -> list[dict[str, Any]]:
        """Per job and socket: last-level misses and DRAM lines per time bucket."""
        edges = np.linspace(0, max(self.makespan, 1), COUNTER_BUCKETS + 1)
        labels = {
            "llc_misses": f"{last_level} misses",
            "dram_local": "local DRAM lines",
            "dram_remote": "remote DRAM lines",
        }
        out = []
        for j in np.unique(self.job).tolist():
            for s in range(self.S):
                sel = (self.job == j) & self.replayed & (self.sock[self.core] == s)
                if not sel.any():
                    continue
                a, b = self.start[sel], self.end[sel]
                series = {
                    k: _rates(a, b, self.mem[k][sel].astype(np.float64), edges) for k in labels
                }
                for i in range(COUNTER_BUCKETS):
                    for k, label in labels.items():
                        out.append(
                            {
                                "ph": "C",
                                "name": label,
                                "pid": self.pid(j, s),
                                "ts": edges[i] * self.us,
                                "args": {"per bucket": round(float(series[k][i]), 3)},
                            }
                        )
        return out

    def allotment(self, allot: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
        """The cores each job holds over time, as counters of an ``allotment`` process."""
        p = len(names) * self.S + 1
        out: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": p, "args": {"name": "allotment"}}
        ]
        for cyc, cores in zip(allot.get("cycles", []), allot.get("cores", []), strict=False):
            for j, n in enumerate(cores):
                out.append(
                    {
                        "ph": "C",
                        "name": f"cores of {names[j]}",
                        "pid": p,
                        "ts": int(cyc) * self.us,
                        "args": {"cores": int(n)},
                    }
                )
        return out


def export_timeline(
    result: str | os.PathLike,
    out: str | os.PathLike,
    fmt: str = "perfetto",
    trace: str | os.PathLike | None = None,
) -> dict:
    """Write :func:`chrome_trace` of ``result`` to ``out`` (atomically); returns it.

    Raises
    ------
    ConfigError
        An unknown format, an ``out`` named with another suffix than ``.json`` (or none),
        or what :func:`chrome_trace` raises.
    """
    out = check_path(out, "out")
    if not isinstance(fmt, str) or fmt not in FORMATS:
        given = spelled(f"fmt={shown(fmt)}", f"--format {shown(fmt)}")
        raise ConfigError(f"{given}: use {' or '.join(FORMATS)}")
    if not named_for(out, (".json",)):
        # `-o t.csv` wrote JSON under that name, which a CSV reader then refused
        given = spelled(f"out={str(out)!r}", f"--out {out}")
        raise ConfigError(f"{given}: the timeline is trace-event JSON; name it .json")
    doc = chrome_trace(result, trace)
    write_text_atomic(out, json.dumps(doc, separators=(",", ":")) + "\n")
    return doc
