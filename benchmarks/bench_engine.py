"""Replay engine benchmark: prints ONE JSON line.

Default: a mergesort trace of at least 50 M references (n = 2^20 keys) replayed under WS
and PDF on itrs-scaling-16 and itrs-scaling-32.  Each replay runs in its own process so
that its peak resident memory (``ru_maxrss``) is its own.  Reported per run: simulated
references per second (engine wall time, memory model included; the one-core speedup
baseline is not computed), strands per second, median engine bookkeeping cost per strand
(Python time between a strand's completion and its successor decision, buffer fill
included), and peak RSS.

Options:
  --small            n = 2^17 (about 6 M references) for a quick check
  --n N              number of keys
  --peak-refs R      also replay a mergesort of about R references (e.g. 5e8) under WS on
                     itrs-scaling-32 and report its peak RSS (target: <= 1 GB for 500 M)
  --accuracy         also measure the interleaving window's error against the strict
                     replay (window 0, exact) on small mergesort and hashjoin traces
  --one ARGS         (internal) run one replay and print its JSON

Targets (issue 4): >= 20 M refs/s at 16 cores, >= 15 M at 32, <= 5 us median per strand,
peak memory <= 1 GB for 500 M references.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _trace(path: Path, n: int, **kw) -> Path:
    from simsched.workloads import generate

    if not path.exists():
        generate("mergesort", path, n=n, **kw)
    return path


def one(trace: str, machine: str, sched: str, window: int | None) -> dict:
    """Run one replay in this process and return its measurements."""
    import simsched

    t0 = time.perf_counter()
    r = simsched.run(trace, machine, sched, seed=0, window=window, speedup=False)
    wall = time.perf_counter() - t0
    e = r.engine
    rec = r.record
    return {
        "machine": machine,
        "scheduler": sched,
        "refs": rec["refs"],
        "strands": rec["strands"],
        "engine_s": round(e["wall_s"], 3),
        "total_s": round(wall, 3),
        "refs_per_s": round(rec["refs"] / e["wall_s"]),
        "strands_per_s": round(rec["strands"] / e["wall_s"]),
        "median_strand_us": round(e["median_strand_ns"] / 1000, 2),
        "kernel_share": round(e["kernel_s"] / e["wall_s"], 3),
        "L2_misses": rec.get("L2_misses"),
        "makespan_cycles": rec["makespan_cycles"],
    }


def _child(trace: str, machine: str, sched: str, window: int | None = None) -> dict:
    """Run one replay in a fresh process; it reports its own peak RSS."""
    args = [sys.executable, __file__, "--one", trace, machine, sched, str(window)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"replay failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def memory_only(trace: str, machine: str) -> dict:
    """The memory model alone on the same references (batch API, 4096-ref blocks spread
    round robin over the cores, no scheduling): the ceiling of the engine's speed."""
    from simsched.machine import load_machine
    from simsched.memory import MemorySystem
    from simsched.trace import open_trace

    m = load_machine(machine)
    mem = MemorySystem(m)
    n = 0
    dt = 0.0
    with open_trace(trace) as t:
        for c in t.iter_chunks():
            a = time.perf_counter()
            for k in range(0, len(c), 4096):
                sl = slice(k, k + 4096)
                core = (n // 4096) % m.cores
                mem.access_batch(core, c.addr[sl], c.size[sl], c.write[sl], 0, c.gap[sl])
                n += len(c.addr[sl])
            dt += time.perf_counter() - a
    return {"machine": machine, "memory_only_refs_per_s": round(n / dt)}


def accuracy(tmp: Path) -> dict:
    """Error of windowed replays against the strict one on small traces."""
    import simsched
    from simsched.workloads import generate

    traces = {
        "mergesort": _trace(tmp / "acc-ms.sst", 1 << 16, grain=1024),
        "hashjoin": tmp / "acc-hj.sst",
    }
    if not traces["hashjoin"].exists():
        generate("hashjoin", traces["hashjoin"], n_build=8192, grain=256)
    out = {}
    for tname, tpath in traces.items():
        for machine in ("itrs-scaling-16", "opteron-8380-4x4"):
            for sched in ("ws", "pdf"):
                ref = simsched.run(tpath, machine, sched, seed=0, window=0, speedup=False)
                r0 = ref.record
                last = r0["last_level"]
                rows = {}
                for w in (0, 10, 30, 100, 300, 1000):
                    r = simsched.run(tpath, machine, sched, seed=0, window=w, speedup=False)
                    x = r.record
                    rows[str(w)] = {
                        "makespan_err": round(x["makespan_cycles"] / r0["makespan_cycles"] - 1, 5),
                        "last_level_miss_err": round(
                            x[f"{last}_misses"] / max(r0[f"{last}_misses"], 1) - 1, 5
                        ),
                        "L1_miss_err": round(x["L1_misses"] / max(r0["L1_misses"], 1) - 1, 5),
                        "queue_delay_err": round(
                            (x["queue_delay_cycles"] - r0["queue_delay_cycles"])
                            / max(r0["makespan_cycles"], 1),
                            5,
                        ),
                        "refs_per_s": round(x["refs"] / r.engine["wall_s"]),
                    }
                out[f"{tname}/{machine}/{sched}"] = rows
    return out


def cab_row(trace: str, machine: str = "opteron-8380-4x4") -> dict:
    """CAB next to WS on a multi-socket machine: engine cost per strand (target: cab <= 1.3x ws).

    A first ``cab`` replay fills the on-disk caches of Eq. 4's inputs (footprint, one-core
    miss intensity), which are not the engine's per-strand cost.
    """
    _child(trace, machine, "cab")
    ws, cab = _child(trace, machine, "ws"), _child(trace, machine, "cab")
    return {
        "machine": machine,
        "runs": [ws, cab],
        "median_strand_ratio": round(
            cab["median_strand_us"] / max(ws["median_strand_us"], 1e-9), 3
        ),
        "engine_s_per_strand_ratio": round(cab["engine_s"] / max(ws["engine_s"], 1e-9), 3),
        "target_ratio": 1.3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--peak-refs", type=float, default=0)
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--machines", default="itrs-scaling-16,itrs-scaling-32")
    ap.add_argument("--tmp", default=None, help="folder for generated traces (kept)")
    ap.add_argument("--one", nargs=4, default=None)
    a = ap.parse_args()
    if a.one:
        import resource

        trace, machine, sched, window = a.one
        d = one(trace, machine, sched, None if window == "None" else int(window))
        d["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(d))
        return
    tmp = Path(a.tmp) if a.tmp else Path(tempfile.mkdtemp(prefix="bench-engine-"))
    tmp.mkdir(parents=True, exist_ok=True)
    n = a.n or ((1 << 17) if a.small else (1 << 20))
    t0 = time.perf_counter()
    trace = _trace(tmp / f"ms-{n}.sst", n)
    gen_s = time.perf_counter() - t0
    from simsched.trace import open_trace

    with open_trace(trace) as t:
        n_refs = t.header.n_refs
        n_strands = t.header.n_strands
    # Warm the kernel caches (compilation is not what this measures).
    for m in a.machines.split(","):
        _child(str(_trace(tmp / "warm.sst", 4096, grain=512)), m, "ws")
    runs = []
    for m in a.machines.split(","):
        for s in ("ws", "pdf"):
            runs.append(_child(str(trace), m, s))
    mem_only = [memory_only(str(trace), m) for m in a.machines.split(",")]
    cab = cab_row(str(trace))
    result = {
        "bench": "engine",
        "memory_only": mem_only,
        "trace": {"workload": "mergesort", "n": n, "refs": n_refs, "strands": n_strands},
        "trace_gen_s": round(gen_s, 2),
        "runs": runs,
        "cab": cab,
        "targets": {
            "refs_per_s_16": 20e6,
            "refs_per_s_32": 15e6,
            "median_strand_us": 5,
            "peak_rss_mb_500M": 1024,
        },
    }
    if a.peak_refs:
        # mergesort references grow like 14 n log2(n) / 18 ... pick n by doubling.
        nn = n
        while nn * (n_refs / n) * (1 + (nn.bit_length() - n.bit_length()) / 18) < a.peak_refs:
            nn *= 2
        big = _trace(tmp / f"ms-{nn}.sst", nn)
        result["peak"] = _child(str(big), "itrs-scaling-32", "ws")
    if a.accuracy:
        result["window_accuracy"] = accuracy(tmp)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
