"""Coherence cost against core count: prints ONE JSON line.

A mergesort trace (``--n`` keys, default 2^17, about 6 M references) is served by the
memory model alone through ``MemorySystem.access_batch``: blocks of 4096 references go
round robin over the cores (no scheduler), so cores share the sorted arrays and writes
find copies in other cores' caches.  Machines: the ITRS 32-core chip (``itrs-scaling-32``:
private L1, one shared L2, write-invalidate coherence) with ``cores_per_socket`` set to
each of ``--cores`` (default 4, 32, 256).  Reported per core count: main-thread CPU
time per reference (``time.thread_time``, which other processes on a shared machine
disturb much less than wall time; best of ``--repeat``), wall time, and the level
statistics' digest (equal digests = identical results).

``--baseline DIR`` also runs the same measurement with the simsched source tree at
``DIR`` (e.g. a checkout of an older revision) in a child process and reports both side
by side (the two alternate, ``--rounds`` times), with the ratio and whether the statistics
are identical.  The load average is
reported before and after.

Target (issue 22): CPU per reference at 256 cores <= 1.3x its cost at 4 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BLOCK = 4096
MACHINE = "itrs-scaling-32"


def _trace(folder: Path, n: int) -> Path:
    from simsched.workloads import generate

    path = folder / f"mergesort-{n}.sst"
    if not path.exists():
        generate("mergesort", path, n=n)
    return path


def measure(trace: str, cores: list[int], repeat: int) -> dict:
    """CPU and wall seconds per reference of the memory model alone, per core count."""
    import numpy as np

    from simsched.machine import load_machine
    from simsched.memory import MemorySystem
    from simsched.trace import open_trace

    with open_trace(trace) as t:
        chunks = [
            (c.addr.copy(), c.size.copy(), c.write.copy(), c.gap.copy()) for c in t.iter_chunks()
        ]
    refs = sum(len(c[0]) for c in chunks)
    out: dict = {}
    for p in cores:
        m = load_machine(MACHINE, {"cores_per_socket": p})
        MemorySystem(m).access_batch(0, *[c[:16] for c in chunks[0][:3]], 0)  # compile
        best_cpu, best_wall, digest = float("inf"), float("inf"), ""
        for _ in range(repeat):
            mem = MemorySystem(m)
            n = 0
            cpu = wall = 0.0
            for addr, size, write, gap in chunks:
                for k in range(0, len(addr), BLOCK):
                    sl = slice(k, k + BLOCK)
                    core = (n // BLOCK) % p
                    c0, w0 = time.thread_time(), time.perf_counter()
                    mem.access_batch(core, addr[sl], size[sl], write[sl], 0, gap[sl])
                    cpu += time.thread_time() - c0
                    wall += time.perf_counter() - w0
                    n += len(addr[sl])
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
            lv = mem.state[mem.geometry.st_lvl]
            digest = hashlib.sha256(np.ascontiguousarray(lv).tobytes()).hexdigest()[:16]
            inv = int(sum(x["invalidations"] for x in mem.stats()["levels"]))
        out[str(p)] = {
            "cpu_ns_per_ref": round(best_cpu / refs * 1e9, 2),
            "wall_ns_per_ref": round(best_wall / refs * 1e9, 2),
            "invalidations": inv,
            "stats_digest": digest,
        }
    return {"refs": refs, "cores": out}


def _ratio(res: dict, hi: int, lo: int) -> float:
    c = res["cores"]
    return round(c[str(hi)]["cpu_ns_per_ref"] / c[str(lo)]["cpu_ns_per_ref"], 3)


def _core_counts(text: str) -> list[int]:
    """``--cores``: comma-separated positive core counts (argparse reports a bad one)."""
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers"
        ) from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: core counts must be at least 1")
    return counts


def _child(src: Path, trace: str, cores: str, repeat: int) -> dict:
    """One measurement with the simsched source tree ``src``, in a fresh process."""
    cmd = [sys.executable, __file__, "--one", "--trace", trace, "--cores", cores]
    env = dict(os.environ, PYTHONPATH=str(src))
    p = subprocess.run(
        [*cmd, "--repeat", str(repeat)], env=env, capture_output=True, text=True, check=False
    )
    from _bench import check_child

    check_child(p, f"run with {src}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print one JSON line."""
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 17, help="mergesort keys")
    ap.add_argument("--cores", default="4,32,256", type=_core_counts, help="core counts")
    ap.add_argument("--repeat", type=int, default=2, help="runs per core count (best kept)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of versions")
    ap.add_argument("--baseline", default="", help="source tree of the 'before' code")
    ap.add_argument("--trace", default="", help="(internal) trace path")
    ap.add_argument("--one", action="store_true", help="(internal) measure and print JSON")
    args = ap.parse_args(argv)
    cores = args.cores
    if args.one:
        emit(measure(args.trace, cores, args.repeat))
        return
    result: dict = {
        "bench": "coherence",
        "machine": MACHINE,
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory() as tmp:
        trace = str(_trace(Path(tmp), args.n))
        runs = {"after": Path(__file__).resolve().parents[1]}
        if args.baseline:
            runs = {"before": Path(args.baseline).resolve(), **runs}
        # Alternate the versions round by round, so that a change in the machine's load
        # affects both; the best time of each core count over the rounds is kept.
        for _ in range(args.rounds):
            for key, src in runs.items():
                res = _child(src, trace, ",".join(map(str, cores)), args.repeat)
                if key in result:
                    for p, old in result[key]["cores"].items():
                        new = res["cores"][p]
                        for f in ("cpu_ns_per_ref", "wall_ns_per_ref"):
                            new[f] = min(new[f], old[f])
                result[key] = res
        for key in runs:
            result[key]["ratio_max_to_min_cores"] = _ratio(result[key], max(cores), min(cores))
    if "before" in result:
        b, a = result["before"]["cores"], result["after"]["cores"]
        result["identical_stats"] = all(b[k]["stats_digest"] == a[k]["stats_digest"] for k in a)
        result["speedup"] = {
            k: round(b[k]["cpu_ns_per_ref"] / a[k]["cpu_ns_per_ref"], 3) for k in a
        }
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["target"] = {"ratio_max_to_min_cores": 1.3}
    result["target_met"] = result["after"]["ratio_max_to_min_cores"] <= 1.3
    emit(result)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
