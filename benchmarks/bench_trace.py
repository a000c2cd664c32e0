"""Trace format benchmark: generation, streaming read, stored size, peak memory.

Prints one JSON line.  Targets (issue 2): mergesort generation >= 20 M refs/s, streaming read
>= 100 M refs/s, <= 1.5 stored bytes per reference for mergesort with n = 2^22, peak memory
<= 500 MB while reading a 200 M-reference trace.

Also measured, without a target: streaming a trace that stores its iterations once
(issue 23), a heat whose repeated part is not a whole number of chunks, so that most of the
program's chunks are copied together from two stored ones: references per second, CPU time
and stored chunks decoded per program chunk (one suffices when reading in order).

Target of issue 23: a heat generated as ``simsched trace gen heat`` does it (the
generators' defaults: time steps stored once with a repeat count) is at most 3x as large
on disk with ``iters=200`` as with ``iters=2`` (``--iters-heat NXxNY``, default the
published LAWS study's 8096 x 1024 grid).

    python benchmarks/bench_trace.py [--n 4194304] [--big-refs 200000000]
        [--repeat-heat 2026x1026x20] [--iters-heat 8098x1026] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

READER = """
import sys, time
from simsched.trace import open_trace
t = open_trace(sys.argv[1])
t0 = time.perf_counter(); n = 0
for c in t.iter_chunks():
    n += len(c)
dt = time.perf_counter() - t0
# VmHWM is this process's own peak; ru_maxrss would carry the parent's peak across exec
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(n, dt, hwm)
"""


REPEAT_READER = """
import sys, time
from simsched.trace import open_trace
with open_trace(sys.argv[1]) as t:
    for _ in t.iter_chunks():  # warm the page cache and the decoder
        pass
t = open_trace(sys.argv[1])  # no decoded chunk kept from the warm-up
c0, t0 = time.process_time(), time.perf_counter(); n = k = 0
for c in t.iter_chunks():
    n += len(c); k += 1
print(n, k, t.stored_decodes, time.perf_counter() - t0, time.process_time() - c0)
"""


def heat_size(text: str) -> tuple[int, int, int]:
    """``NXxNYxITERS`` of ``--repeat-heat``."""
    nx, ny, iters = _dims(text, "NXxNYxITERS", "2026x1026x20")
    if min(nx, ny) < 3 or iters < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: NX and NY must be >= 3, ITERS >= 2")
    return nx, ny, iters


def heat_grid(text: str) -> tuple[int, int]:
    """``NXxNY`` of ``--iters-heat``."""
    nx, ny = _dims(text, "NXxNY", "8098x1026")
    if min(nx, ny) < 3:
        raise argparse.ArgumentTypeError(f"{text!r}: NX and NY must be >= 3")
    return nx, ny


def _dims(text: str, form: str, example: str) -> tuple[int, ...]:
    """Integers separated by ``x``, as many as ``form`` names."""
    try:
        out = tuple(int(v) for v in text.split("x"))
    except ValueError:
        out = ()
    if len(out) != form.count("x") + 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not {form} (e.g. {example})")
    return out


def iteration_sizes(folder: Path, nx: int, ny: int) -> dict:
    """Stored bytes of a heat with 2 and with 200 iterations (the generator's defaults)."""
    from simsched.workloads import generate

    size = {}
    for iters in (2, 200):
        path = folder / f"heat-{nx}x{ny}-iters{iters}.sst"
        generate("heat", path, nx=nx, ny=ny, iters=iters)
        size[iters] = path.stat().st_size
    return {
        "iters_heat": f"{nx}x{ny}",
        "iters2_bytes": size[2],
        "iters200_bytes": size[200],
        "iters200_over_iters2": size[200] / size[2],
    }


def run_child(script: str, path: Path) -> list[str]:
    """What ``script`` prints about ``path`` in a child process (its own memory and CPU)."""
    return subprocess.run(
        [sys.executable, "-c", script, str(path)], check=True, capture_output=True, text=True
    ).stdout.split()


def repeat_read(path: Path) -> dict[str, float]:
    """Stream a trace with a repeated part in a child process (its own CPU time)."""
    out = run_child(REPEAT_READER, path)
    n, k, dec, wall, cpu = int(out[0]), int(out[1]), int(out[2]), float(out[3]), float(out[4])
    return {
        "repeat_refs": n,
        "repeat_read_refs_per_s": n / wall,
        "repeat_read_cpu_s": cpu,
        "repeat_read_wall_s": wall,
        "repeat_stored_decodes_per_chunk": dec / k,
    }


def write_big(path: Path, n: int, seed: int) -> None:
    """A large trace without a generator's cost: strided sweeps plus random hot-set accesses."""
    from simsched.trace import TraceBuilder

    rng = np.random.default_rng(seed)
    step = 1 << 20
    with TraceBuilder(path, program="bench-big", backend="synthetic") as b:
        for k in range(0, n, step):
            m = min(step, n - k)
            a = (np.arange(k, k + m, dtype=np.uint64) * np.uint64(8)) % np.uint64(1 << 30)
            hot = rng.integers(0, 1 << 19, m // 2, dtype=np.uint64) * np.uint64(8)
            a[1::2] = hot[: a[1::2].shape[0]] + np.uint64(1 << 32)
            b.refs(a, 8, rng.random(m) < 0.25, rng.integers(0, 4, m))
            if (k // step) % 16 == 15:
                b.spawn()
                b.ret()


def read_in_child(path: Path) -> tuple[int, float, float]:
    out = run_child(READER, path)
    n, dt, rss_kb = int(out[0]), float(out[1]), int(out[2])
    return n, dt, rss_kb / 1024


def main() -> None:
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22, help="mergesort elements")
    ap.add_argument("--big-refs", type=int, default=200_000_000, help="refs of the memory test")
    ap.add_argument(
        "--repeat-heat",
        default="2026x1026x20",
        type=heat_size,
        help="heat NXxNYxITERS stored with its repeated part (streamed in full)",
    )
    ap.add_argument(
        "--iters-heat",
        default="8098x1026",
        type=heat_grid,
        help="heat NXxNY generated with 2 and with 200 iterations (stored size)",
    )
    ap.add_argument("--keep", type=Path, default=None, help="folder for the traces (kept)")
    args = ap.parse_args()
    from _bench import scratch_folder

    with scratch_folder(args.keep, "simsched-bench-") as folder:
        result = measure(args, folder)
    emit(result, sort_keys=True)


def measure(args: argparse.Namespace, folder: Path) -> dict:
    """Run every measurement with the traces in ``folder``; the JSON record."""
    from simsched.trace import open_trace
    from simsched.workloads import generate

    ms = folder / f"mergesort-{args.n}.sst"
    generate("mergesort", folder / "warm.sst", n=4096)  # compile kernels outside the timing
    t0 = time.perf_counter()
    h = generate("mergesort", ms, n=args.n, seed=1)
    gen_s = time.perf_counter() - t0
    size = ms.stat().st_size

    t = open_trace(ms)
    for _ in t.iter_chunks():  # warm the page cache and the decoder
        pass
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        n = sum(len(c) for c in t.iter_chunks())
        best = min(best, time.perf_counter() - t0)
    t.close()

    big = folder / "big.sst"
    t0 = time.perf_counter()
    write_big(big, args.big_refs, seed=2)
    big_write_s = time.perf_counter() - t0
    big_n, big_dt, big_rss = read_in_child(big)

    nx, ny, iters = args.repeat_heat
    rep = folder / f"heat-{nx}x{ny}x{iters}.sst"
    rh = generate("heat", rep, nx=nx, ny=ny, iters=iters, cutoff=8, init=False, repeat=True)
    body = rh.repeat["stored_refs"] if rh.repeat else 0
    rep_read = repeat_read(rep)
    sizes = iteration_sizes(folder, *args.iters_heat)

    result = {
        "bench": "trace",
        "mergesort_n": args.n,
        "mergesort_refs": h.n_refs,
        "gen_refs_per_s": h.n_refs / gen_s,
        "read_refs_per_s": n / best,
        "bytes_per_ref": size / h.n_refs,
        "big_refs": big_n,
        "big_write_refs_per_s": big_n / big_write_s,
        "big_read_refs_per_s": big_n / big_dt,
        "big_read_peak_rss_mb": big_rss,
        "repeat_heat": f"{nx}x{ny}x{iters}",
        "repeat_body_refs": body,
        **rep_read,
        **sizes,
        "loadavg_1m": os.getloadavg()[0],
        "targets": {
            "gen_refs_per_s": 20e6,
            "read_refs_per_s": 100e6,
            "bytes_per_ref": 1.5,
            "big_read_peak_rss_mb": 500,
            "iters200_over_iters2": 3.0,
        },
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "peak_rss_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    result["met"] = {
        "gen": result["gen_refs_per_s"] >= 20e6,
        "read": result["read_refs_per_s"] >= 100e6,
        "size": result["bytes_per_ref"] <= 1.5,
        "memory": big_rss <= 500,
        "iters_size": sizes["iters200_over_iters2"] <= 3.0,
    }
    return result


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
