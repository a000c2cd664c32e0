"""Many-core set-up benchmark: a tiny program replayed on chips of thousands of cores.

Prints one JSON line.  ``fib`` (n = 12 by default: 1,164 strands) under each scheduler on
``itrs-scaling-16`` grown to P cores (256 cores per socket, P / 256 sockets), each replay
``simsched run`` in its own process.  The program is small on purpose: what is measured is
what a run costs because the chip is large (the job's victim lists, the assignment of its
cores, one private cache hierarchy per core), which a sweep over projected chips pays at
every point.  Reported per core count and scheduler: CPU and wall seconds of the whole
process, its peak resident memory, and the makespan (so that two versions of simsched
can be seen to simulate the same thing); the best of ``--repeat`` runs, since a chip's
first run compiles its memory model's kernels.  The runs go in increasing order of cores,
so that the peak memory of finished children (``ru_maxrss``, a maximum over all of them)
is the latest configuration's.

    python benchmarks/bench_manycore.py [--cores 1024,4096,16384] [--schedulers ws,pdf]
                                        [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource


def cores_list(text: str) -> list[int]:
    """``--cores``: core counts, each 1-256 or a multiple of 256."""
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of core counts") from None
    if not out or any(p < 1 or (p > 256 and p % 256) for p in out):
        raise argparse.ArgumentTypeError(f"{text!r}: each count is 1-256 or a multiple of 256")
    return out


def main() -> None:
    """Run the benchmark and print its JSON line."""
    import subprocess
    import time

    from _bench import check_child, cli_command, emit, scratch_folder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=cores_list, default=[1024, 4096, 16384])
    ap.add_argument("--schedulers", default="ws,pdf")
    ap.add_argument("--n", type=int, default=12, help="fib's n")
    ap.add_argument("--repeat", type=int, default=2, help="runs per point (best of)")
    ap.add_argument("--keep", default=None, help="keep the scratch files in this folder")
    a = ap.parse_args()
    rows = []
    with scratch_folder(a.keep, "simsched-manycore-") as tmp:
        trace = tmp / "fib.sst"
        p = subprocess.run(
            cli_command("trace", "gen", "fib", "-p", f"n={a.n}", "-o", str(trace)),
            capture_output=True,
        )
        check_child(p, "trace gen")
        for cores in a.cores:
            per, sockets = min(cores, 256), max(cores // 256, 1)
            for sched in [s.strip() for s in a.schedulers.split(",") if s.strip()]:
                out = tmp / f"{sched}-{cores}"
                cmd = cli_command(
                    "run", "-t", str(trace), "-m", "itrs-scaling-16", "-s", sched,
                    "--set", f"cores_per_socket={per}", "--set", f"sockets={sockets}",
                    "-o", str(out),
                )  # fmt: skip
                runs = []
                for _ in range(max(a.repeat, 1)):
                    kids = resource.RUSAGE_CHILDREN
                    r0, t0 = resource.getrusage(kids), time.perf_counter()
                    p = subprocess.run(cmd, capture_output=True)
                    wall = time.perf_counter() - t0
                    r1 = resource.getrusage(kids)
                    check_child(p, f"{sched} on {cores} cores")
                    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
                    runs.append((cpu, wall, r1.ru_maxrss))
                rec = json.loads((out / "result.json").read_text())
                rows.append(
                    {
                        "cores": cores,
                        "scheduler": sched,
                        "cpu_s": round(min(r[0] for r in runs), 3),
                        "wall_s": round(min(r[1] for r in runs), 3),
                        "peak_rss_mb": round(runs[-1][2] / 1024, 1),
                        "makespan_cycles": rec["makespan_cycles"],
                    }
                )
    emit(
        {
            "bench": "manycore",
            "workload": f"fib n={a.n}",
            "machine": "itrs-scaling-16, 256 cores per socket",
            "loadavg_1m": round(os.getloadavg()[0], 2),
            "rows": rows,
        }
    )


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
