"""Capture benchmark: gcc and valgrind backends on mergesort, against the native run.

Prints one JSON line.  Targets (capture issue): the gcc backend captures mergesort of 4 M
ints in <= 5x the native run time, compressed output included, and the imported trace
stores <= 1.5 bytes per reference; the valgrind backend runs in <= 60x native, and its
instruction total equals ``valgrind --tool=lackey``'s guest instruction count for the same
run (lackey is slow, so that check uses a smaller input, ``--lackey-n``).  The import of
a capture made mostly of struct copies (``benchmarks/structcopy.c``, 200-byte records
copied one by one) reaches >= 20 M references per second (``--import-only`` runs just
that case).

The gcc backend's runs are measured side by side with the native ones: each of
``--repeat`` rounds runs the native build, the instrumented build without recording and
the instrumented build recording its compressed raw stream, one after the other, and each
figure is the best of its rounds (the machine may be shared and noisy).  Besides wall
times the benchmark reports CPU times (user + system of the child, compression thread
included), whose ratio is less sensitive to other load.  A final ``simsched capture``
run gives the import figures (``import`` times are simsched's import and validation,
reported separately) and the valgrind run.

    python benchmarks/bench_capture.py [--n 4194304] [--grain 2048] [--lackey-n 65536]
                                       [--structcopy-n 65536] [--import-only]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "traces" / "programs" / "mergesort.c"
STRUCTCOPY = ROOT / "benchmarks" / "structcopy.c"


def _import_case(d: Path, n: int, repeat: int) -> dict[str, object]:
    """Import a gcc-backend capture made mostly of struct copies (RANGE records).

    The raw stream is captured once; its import (expanding every range into line-sized
    references, building and compressing the trace; no validation) is timed alone, best
    of ``repeat`` runs.
    """
    from simsched.capture import capture, compile_program
    from simsched.trace import import_raw
    from simsched.trace.raw import REC_RANGE, REC_REF, iter_raw_blocks

    exe = d / "structcopy"
    assert compile_program(["-O2", str(STRUCTCOPY), "-o", str(exe)]) == 0
    raw = d / "sc.raw.zst"
    capture(str(exe), [str(n), "8"], d / "sc.sst", raw=raw)
    kinds = {REC_REF: 0, REC_RANGE: 0}
    for _, recs in iter_raw_blocks(raw):
        for k in kinds:
            kinds[k] += int((recs["kind"] == k).sum())
    best = float("inf")
    refs = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        h = import_raw(raw, d / "sc2.sst")
        best = min(best, time.perf_counter() - t0)
        refs = h.n_refs
    return {
        "structcopy_n": n,
        "structcopy_refs": refs,
        "structcopy_ref_records": kinds[REC_REF],
        "structcopy_range_records": kinds[REC_RANGE],
        "structcopy_import_s": round(best, 3),
        "structcopy_import_mrefs_per_s": round(refs / best / 1e6, 2),
        "structcopy_import_target_mrefs_per_s": 20.0,
    }


def main() -> None:
    """Run the benchmark and print its JSON line."""
    from _bench import emit, run_child

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024, help="ints to sort")
    ap.add_argument("--grain", type=int, default=2048)
    ap.add_argument("--lackey-n", type=int, default=65536, help="ints for the lackey check")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of gcc-backend runs (best of)")
    ap.add_argument("--skip-valgrind", action="store_true")
    ap.add_argument(
        "--structcopy-n", type=int, default=65536, help="200-byte records of the import case"
    )
    ap.add_argument(
        "--import-only", action="store_true", help="run only the struct-copy import case"
    )
    a = ap.parse_args()
    if a.import_only:
        with tempfile.TemporaryDirectory(prefix="bench-capture-") as d:
            os.environ.setdefault("SIMSCHED_CACHE_DIR", str(Path(d) / "cache"))
            out = {"bench": "capture", "repeat": a.repeat}
            out.update(_import_case(Path(d), a.structcopy_n, a.repeat))
        emit(out, sort_keys=True)
        return

    from simsched.capture import build, capture, compile_program

    with tempfile.TemporaryDirectory(prefix="bench-capture-") as d:
        d = Path(d)
        os.environ.setdefault("SIMSCHED_CACHE_DIR", str(d / "cache"))
        inst, plain = d / "ms_gcc", d / "ms_plain"
        assert compile_program(["-O2", str(SOURCE), "-o", str(inst)]) == 0
        subprocess.run(
            ["gcc", "-O2", f"-I{build.source_dir()}", str(SOURCE), "-o", str(plain)], check=True
        )
        args = [str(a.n), str(a.grain)]
        raw = d / "run.raw.zst" if build.gcc_runtime()[1] else d / "run.raw"
        rec_env = dict(os.environ, SIMSCHED_RAW_OUT=str(raw))
        best: dict[str, tuple[float, float]] = {}
        for _ in range(a.repeat):
            for key, cmd, env in (
                ("native", [str(plain), *args], None),
                ("inst", [str(inst), *args], None),  # instrumented, not recording
                ("rec", [str(inst), *args], rec_env),  # recording the raw stream
            ):
                cpu, wall = run_child(cmd, env)
                w0, c0 = best.get(key, (float("inf"), float("inf")))
                best[key] = (min(w0, wall), min(c0, cpu))
        raw_bytes = raw.stat().st_size
        raw.unlink()
        native, native_cpu = best["native"]
        run, run_cpu = best["rec"]

        g = capture(str(inst), args, d / "g.sst")
        g_bytes = (d / "g.sst").stat().st_size
        out = {
            "bench": "capture",
            "program": "mergesort",
            "n": a.n,
            "grain": a.grain,
            "repeat": a.repeat,
            "native_s": round(native, 4),
            "native_cpu_s": round(native_cpu, 4),
            "gcc_instrumented_not_recording_s": round(best["inst"][0], 4),
            "gcc_instrumented_not_recording_cpu_s": round(best["inst"][1], 4),
            "gcc_run_s": round(run, 4),
            "gcc_run_cpu_s": round(run_cpu, 4),
            "gcc_overhead_x": round(run / native, 2),
            "gcc_overhead_cpu_x": round(run_cpu / native_cpu, 2),
            "gcc_overhead_target_x": 5.0,
            "gcc_raw_bytes_per_ref": round(raw_bytes / g.header.n_refs, 3),
            "gcc_import_s": round(g.import_seconds, 3),
            "gcc_refs": g.header.n_refs,
            "gcc_stored_bytes_per_ref": round(g_bytes / g.header.n_refs, 3),
            "gcc_stored_bytes_per_ref_target": 1.5,
        }
        (d / "g.sst").unlink()
        out.update(_import_case(d, a.structcopy_n, a.repeat))
        if not a.skip_valgrind:
            v = capture(str(plain), args, d / "v.sst", backend="valgrind")
            out.update(
                {
                    "valgrind_run_s": round(v.run_seconds, 3),
                    "valgrind_overhead_x": round(v.run_seconds / native, 2),
                    "valgrind_overhead_target_x": 60.0,
                    "valgrind_import_s": round(v.import_seconds, 3),
                    "valgrind_refs": v.header.n_refs,
                    "valgrind_stored_bytes_per_ref": round(
                        (d / "v.sst").stat().st_size / v.header.n_refs, 3
                    ),
                }
            )
            (d / "v.sst").unlink()
            small = [str(a.lackey_n), str(a.grain)]
            vs = capture(str(plain), small, d / "vs.sst", backend="valgrind")
            env = dict(os.environ, VALGRIND_LIB=str(build.valgrind_tool()))
            lk = subprocess.run(
                ["valgrind", "--tool=lackey", str(plain), *small],
                env=env,
                capture_output=True,
                text=True,
            ).stderr
            m = re.search(r"guest instrs:\s+([\d,]+)", lk)
            lackey = int(m.group(1).replace(",", "")) if m else None
            out.update(
                {
                    "lackey_n": a.lackey_n,
                    "valgrind_guest_instructions": vs.tool_stats.get("guest_instructions"),
                    "lackey_guest_instructions": lackey,
                    "instructions_equal": vs.tool_stats.get("guest_instructions") == lackey,
                }
            )
    emit(out, sort_keys=True)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
