"""Start-up benchmark: the CPU time of ``simsched --version`` and ``simsched machine list``.

Prints one JSON line.  Target (issue 25): each command costs at most 0.15 CPU-s (user +
system of the child process and anything it waits for, such as ``git``), so asking for the
version or the machine presets never pays for numpy, numba, pandas or the simulator.  CPU
time is the figure to compare, being much less sensitive to other load on a shared machine
than wall time; the best of ``--repeat`` runs is reported, with the load average at the
start so a reader can judge the wall figures.

    python benchmarks/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os

COMMANDS = {"version": ["--version"], "machine_list": ["machine", "list"]}
TARGET_CPU_S = 0.15


def measure(args: list[str]) -> tuple[float, float]:
    """Run ``simsched ARGS`` once; return its (CPU, wall) seconds."""
    from _bench import cli_command, run_child

    return run_child(cli_command(*args), {**os.environ, "COLUMNS": "120"})


def main() -> None:
    """Run the benchmark and print its JSON line."""
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (best of)")
    a = ap.parse_args()
    out: dict[str, object] = {
        "bench": "startup",
        "loadavg_1m": os.getloadavg()[0],
        "target_cpu_s": TARGET_CPU_S,
    }
    measure(["--version"])  # warm the file cache and the byte-code files
    for key, args in COMMANDS.items():
        runs = [measure(args) for _ in range(a.repeat)]
        cpu = min(c for c, _ in runs)
        out[f"{key}_cpu_s"] = round(cpu, 3)
        out[f"{key}_wall_s"] = round(min(w for _, w in runs), 3)
        out[f"{key}_ok"] = cpu <= TARGET_CPU_S
    emit(out)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
