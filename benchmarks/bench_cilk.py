"""Cilk rewriting benchmark: what ``simsched cc`` adds to the build of a Cilk source.

Generates a C source of about 2,000 lines that uses every Cilk construct the rewriter
accepts (spawns in the three forms, syncs, scopes, ``cilk_for`` loops with and without
``#pragma cilk grainsize``, implicit syncs at returns), then measures, best of several
rounds:

* ``rewrite_s``: :func:`simsched.capture.cilk.rewrite` on the preprocessed unit (parse
  and rewrite);
* ``added_s``: everything ``simsched cc`` adds before the compiler runs -- the
  preprocessing pass and the rewrite (:func:`simsched.capture.cilkcc.rewrite_command`);
* ``compile_s``: the plain gcc compile of the rewritten unit, for scale;
* ``cli_added_s``: the wall time of ``simsched cc --backend valgrind -O2 -c`` on the
  source (a fresh process: start-up, preprocessing, rewrite, compile of the rewritten
  unit) less that of the same command on the source's serial elision (the keywords
  defined away, so nothing is rewritten): what the rewriting adds to a build;
* ``cli_startup_s``: that elision build less ``gcc -O2 -c`` of it -- simsched's own
  start-up and preprocessing pass, which every ``simsched cc`` build pays.

Prints one JSON line.  Target (issue 14): the rewriting adds <= 1 s to the build of a
2,000-line source.

    python benchmarks/bench_cilk.py [--lines 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from simsched.capture import build
from simsched.capture.cilk import CilkOptions, rewrite
from simsched.capture.cilkcc import cpp_command, rewrite_command

HEADER = """#include <cilk/cilk.h>
#include <stdio.h>
#include <stdlib.h>

static long data[1 << 16];
static long leaf(long x) { return x * 3 + 1; }
"""
ELISION = "".join(
    f"#define {k}{v}\n"
    for k, v in (("cilk_spawn", ""), ("cilk_sync", ""), ("cilk_scope", ""), ("cilk_for", " for"))
)
# One block of 20 lines; the source is as many blocks as it takes.
BLOCK = """
long work{k}(long n)
{{
    if (n < 2)
        return leaf(n);
    long a = cilk_spawn work{k}(n - 1);
    long b;
    b = cilk_spawn work{k}(n / 2);
    cilk_spawn leaf(n);
    cilk_sync;
    cilk_scope {{
        cilk_spawn leaf(a + b);
    }}
#pragma cilk grainsize 8
    cilk_for (long i = 0; i < n; i++)
        data[i & 65535] += leaf(i + a);
    cilk_for (int j = (int)n; j > 0; j -= 2) data[j & 65535] -= b;
    return a + b;
}}
"""


def source(lines: int) -> str:
    """A Cilk source of at least ``lines`` lines."""
    per = BLOCK.count("\n")
    blocks = max(1, -(-(lines - HEADER.count("\n") - 6) // per))
    body = "".join(BLOCK.format(k=k) for k in range(blocks))
    calls = " + ".join(f"work{k}(3)" for k in range(0, blocks, max(1, blocks // 8)))
    main = f'\nint main(void)\n{{\n    long s = {calls};\n    printf("%ld\\n", s);\n    return 0;\n}}\n'
    return HEADER + body + main


def best(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        src = work / "gen.c"
        src.write_text(source(a.lines))
        cmd = ["gcc", f"-I{build.source_dir()}", "-O2", str(src), "-c", "-o", str(work / "gen.o")]
        pre_path = work / "gen.i"
        subprocess.run(cpp_command(cmd, 3, pre_path), check=True)
        pre = pre_path.read_bytes()
        rewrite(pre, str(src))  # warm the parser up (loading the grammar)
        rewrite_s = best(lambda: rewrite(pre, str(src), CilkOptions()), a.rounds)
        rounds = iter(range(10**9))

        def added() -> None:
            sub = work / f"r{next(rounds)}"
            sub.mkdir()
            rewrite_command(cmd, CilkOptions(), sub)

        added_s = best(added, a.rounds)
        (work / "final").mkdir()
        final = rewrite_command(cmd, CilkOptions(), work / "final")
        compile_s = best(lambda: subprocess.run(final, check=True), max(1, a.rounds // 2))
        el = work / "elision.c"
        el.write_text(src.read_text().replace("#include <cilk/cilk.h>\n", ELISION))
        # the child imports the same simsched as this process
        root = str(Path(sys.modules["simsched"].__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=root)

        def cc(path: Path) -> float:
            cmd = [sys.executable, "-c", "from simsched.cli import main; main()", "cc"]
            cmd += ["--backend", "valgrind", "-O2", "-c", str(path), "-o", str(work / "cli.o")]
            return best(lambda: subprocess.run(cmd, check=True, env=env), max(1, a.rounds // 2))

        cli_s, cli_elision_s = cc(src), cc(el)
        gcc_el = ["gcc", "-O2", "-c", str(el), "-o", str(work / "e.o")]
        gcc_elision_s = best(lambda: subprocess.run(gcc_el, check=True), max(1, a.rounds // 2))
        out = {
            "bench": "cilk",
            "lines": src.read_text().count("\n"),
            "preprocessed_lines": pre.count(b"\n"),
            "rewrite_s": round(rewrite_s, 4),
            "added_s": round(added_s, 4),
            "compile_s": round(compile_s, 4),
            "cli_added_s": round(cli_s - cli_elision_s, 4),
            "cli_startup_s": round(cli_elision_s - gcc_elision_s, 4),
            "target_added_s": 1.0,
            "meets_target": cli_s - cli_elision_s <= 1.0,
            "rounds": a.rounds,
            "python": platform.python_version(),
        }
    emit(out)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
