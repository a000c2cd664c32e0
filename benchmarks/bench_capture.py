"""Capture benchmark: gcc and valgrind backends on mergesort, against the native run.

Prints one JSON line.  Targets (capture issue): the gcc backend captures mergesort of 4 M
ints in <= 5x the native run time, compressed output included, and the imported trace
stores <= 1.5 bytes per reference; the valgrind backend runs in <= 60x native, and its
instruction total equals ``valgrind --tool=lackey``'s guest instruction count for the same
run (lackey is slow, so that check uses a smaller input, ``--lackey-n``).

Native and captured runs are measured side by side in the same process, each the best of
``--repeat`` runs for the native one.  ``run`` times are the program's run under the
backend (the raw stream written and compressed); ``import`` times are simsched's import
and validation, reported separately.

    python benchmarks/bench_capture.py [--n 4194304] [--grain 2048] [--lackey-n 65536]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "traces" / "programs" / "mergesort.c"


def _time(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Run the benchmark and print its JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024, help="ints to sort")
    ap.add_argument("--grain", type=int, default=2048)
    ap.add_argument("--lackey-n", type=int, default=65536, help="ints for the lackey check")
    ap.add_argument("--repeat", type=int, default=3, help="native runs (best of)")
    ap.add_argument("--skip-valgrind", action="store_true")
    a = ap.parse_args()

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
        native = _time([str(plain), *args], a.repeat)
        native_inst = _time([str(inst), *args], a.repeat)  # instrumented, not recording

        g = capture(str(inst), args, d / "g.sst")
        g_bytes = (d / "g.sst").stat().st_size
        out = {
            "bench": "capture",
            "program": "mergesort",
            "n": a.n,
            "grain": a.grain,
            "native_s": round(native, 4),
            "gcc_instrumented_not_recording_s": round(native_inst, 4),
            "gcc_run_s": round(g.run_seconds, 4),
            "gcc_overhead_x": round(g.run_seconds / native, 2),
            "gcc_overhead_target_x": 5.0,
            "gcc_raw_bytes_per_ref": round(g.raw_bytes / g.header.n_refs, 3),
            "gcc_import_s": round(g.import_seconds, 3),
            "gcc_refs": g.header.n_refs,
            "gcc_stored_bytes_per_ref": round(g_bytes / g.header.n_refs, 3),
            "gcc_stored_bytes_per_ref_target": 1.5,
        }
        (d / "g.sst").unlink()
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
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
