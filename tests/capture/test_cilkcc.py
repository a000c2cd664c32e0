"""Tests of simsched.capture.cilkcc: ``simsched cc`` on Cilk programs, end to end.

* The Cilk-keyword versions of four benchmark programs (traces/programs/cilk/) capture to
  the same DAG and the same multiset of heap and global references as the marker
  versions, under the gcc backend and under valgrind.
* A program using every accepted form prints what its serial elision prints.
* ``cilk_for`` splits its range as OpenCilk does (a model of the recursion gives the
  frames, strands and the leaf sizes in order), with OpenCilk's default grain.
* The acceptance command of the feature, through the CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simsched.capture import build, capture, compile_program
from simsched.capture.cilk import CilkOptions
from simsched.capture.cilkcc import cpp_command, parse_cc_options, sources
from simsched.errors import CaptureError
from simsched.trace import open_trace
from simsched.trace.format import EDGE_JOIN
from simsched.trace.reader import Trace

from .conftest import PROGRAMS, data_refs, needs_gcc, needs_valgrind

DATA = Path(__file__).resolve().parent / "data"

# (marker source, Cilk source, program arguments, extra flags, Cilk options)
PAIRS = {
    "fib": ("fib.c", "cilk/fib.c", ["12", "4"], [], None),
    "mergesort": ("mergesort.c", "cilk/mergesort.c", ["2048", "256"], [], None),
    "queens": ("queens.c", "cilk/queens.c", ["6", "2"], [], None),
    "heat": ("stencil2d.c", "cilk/heat.c", ["32", "2", "4"], ["-DKIND=HEAT"],
             CilkOptions(split="binary")),
}  # fmt: skip


def test_parse_cc_options_takes_out_its_own_options():
    opts, rest = parse_cc_options(
        ["-O2", "--backend", "valgrind", "--cilk-for-grain=8", "x.c", "--cilk-workers", "4"]
        + ["--cilk-for-split", "binary", "-o", "x", "--show-rewrite=x.c"]
    )
    assert rest == ["-O2", "x.c", "-o", "x"]
    assert opts.backend == "valgrind" and opts.show == "x.c"
    assert opts.cilk == CilkOptions(grain=8, workers=4, split="binary")
    assert parse_cc_options(["x.c"])[0].cilk == CilkOptions()
    for bad in (
        ["--cilk-for-grain", "0"],
        ["--cilk-workers=x"],
        ["--backend=dr"],
        ["--cilk-for-split"],
    ):
        with pytest.raises(CaptureError):
            parse_cc_options(bad)


def test_cpp_command_keeps_preprocessor_flags_only(tmp_path):
    cmd = [
        "gcc",
        "-Iinc",
        "-D",
        "N=3",
        "-O2",
        "a.c",
        "b.cpp",
        "-c",
        "-o",
        "a.o",
        "-lm",
        "-L",
        "lib",
    ]
    cmd += ["-Wl,--wrap=memcpy", "-MD", "-MF", "a.d", "x.o"]
    assert sources(cmd) == [5, 6]
    cpp = cpp_command(cmd, 5, tmp_path / "a.i")
    assert cpp[:5] == ["gcc", "-Iinc", "-D", "N=3", "-O2"]
    assert cpp[5:9] == [
        "-E",
        "-DSIMSCHED_CILK=1",
        "-include",
        str(build.source_dir() / "simsched_cilk.h"),
    ]
    assert cpp[9:] == ["-x", "c", "a.c", "-o", str(tmp_path / "a.i")]


@needs_gcc
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_a_cilk_c_source_builds_under_a_cxx_driver(cache, tmp_path, monkeypatch):
    """SIMSCHED_CC=g++ preprocessed a .c source as C++ (g++ reads .c as C++) but compiled
    the rewritten unit as C: a wall of errors about extern "C" and static_assert."""
    monkeypatch.setenv("SIMSCHED_CC", "g++")
    prog = tmp_path / "fib"
    flags = ["-O2", "-Wall", "-Wextra", "-Wconversion", "-Werror"]
    assert compile_program([*flags, str(PROGRAMS / "cilk" / "fib.c"), "-o", str(prog)]) == 0
    res = capture(str(prog), ["12", "4"], tmp_path / "fib.sst")
    assert res.header.n_frames > 1


def test_cplusplus_source_with_cilk_is_rejected(tmp_path):
    src = tmp_path / "p.cpp"
    src.write_text("// cilk_spawn in a comment\nint f();\nint main() { cilk_spawn f(); }\n")
    with pytest.raises(CaptureError, match=rf"^{src}:3:14: cilk_spawn: C\+\+ sources cannot"):
        compile_program([str(src), "-c", "-o", str(tmp_path / "p.o")], backend="valgrind")


@needs_gcc
def test_show_rewrite_prints_the_source_lines_rewritten(capsys):
    from simsched.cli import main

    src = PROGRAMS / "cilk" / "fib.c"
    with pytest.raises(SystemExit) as e:
        main(["cc", "--show-rewrite", str(src)])
    assert e.value.code == 0
    out = capsys.readouterr().out.split("\n")
    lines = src.read_text().split("\n")
    expected = [_expected_line(line) for line in lines[:-1]]
    body = lines.index("static long fib(long n)") + 1  # fib, not main, opens its own frame
    expected[body] += FRAME
    assert out[: len(lines) - 1] == expected


@needs_gcc
def test_show_rewrite_of_a_source_that_is_not_utf8(tmp_path, capsys):
    """The preprocessor's warnings quote the source's bytes; reading them as UTF-8 raised a
    UnicodeDecodeError (a traceback, exit 1)."""
    from simsched.cli import main

    src = tmp_path / "q.c"
    src.write_bytes(b"int x = '\x9e;\nint main(){return 0;}\n")
    with pytest.raises(SystemExit) as e:
        main(["cc", "--show-rewrite", str(src)])
    assert e.value.code == 0
    assert capsys.readouterr().out.split("\n")[1] == "int main(){return 0;}"


@needs_gcc
def test_show_rewrite_of_a_source_that_does_not_preprocess_or_a_folder(tmp_path, capsys):
    # the message quoted gcc's last two lines, its caret line and "compilation terminated."
    from simsched.cli import main

    src = tmp_path / "inc.c"
    src.write_text('#include "nonexist.h"\nint main(void) { return 0; }\n')
    for path, message in (
        (src, f"{src}: preprocessing failed: {src}:1:10: fatal error: nonexist.h: No such file"),
        (tmp_path, f"{tmp_path}: is a folder, not a source file"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["cc", "--show-rewrite", str(path)])
        assert e.value.code == 2
        assert f"simsched: error: {message}" in capsys.readouterr().err


def test_show_rewrite_of_a_named_pipe_says_it_is_one(tmp_path, capsys):
    # It was "no such source file", of a pipe that exists.
    from simsched.cli import main

    fifo = tmp_path / "p.c"
    os.mkfifo(fifo)
    with pytest.raises(SystemExit) as e:
        main(["cc", "--show-rewrite", str(fifo)])
    assert e.value.code == 2
    assert f"simsched: error: {fifo}: is a named pipe, not a source file" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_cc_help_describes_simsched_cc(flag, capsys):
    from simsched.cli import main

    with pytest.raises(SystemExit) as e:
        main(["cc", "-O2", flag])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: simsched cc [OPTIONS] [GCC ARGUMENTS]")
    for opt in (
        "--backend",
        "--cilk-for-grain",
        "--cilk-workers",
        "--cilk-for-split",
        "--show-rewrite",
        "--gcc-help",
    ):
        assert opt in out


FRAME = " __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(706310223639202982L);"


def _expected_line(line: str) -> str:
    """fib.c's lines as --show-rewrite shows them (comments are gone after preprocessing)."""
    if line.lstrip().startswith(("/*", "*")):
        return ""
    return {
        "    long a = cilk_spawn fib(n - 1);": "    long a; __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(fib), __typeof__(*(fib))), 706310223639202982L, 0L)); a = fib(n - 1); __ss_cilk_spawn_end();",
        "    long b = last_child fib(n - 2);": "    long b; __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(fib), __typeof__(*(fib))), 706310223639202982L, 0L)); b = fib(n - 2); __ss_cilk_spawn_end();",
        "    cilk_sync;": "    __ss_cilk_sync();",
        "    SS_ROI_BEGIN();": "    simsched_marker((int)5u, 0);",
        "    SS_ROI_END();": "    simsched_marker((int)6u, 0);",
        "    result = last_child fib(n);": "    { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(fib), __typeof__(*(fib))), 706310223639202982L, 0L)); result = fib(n); __ss_cilk_spawn_end(); }",
        "    return 0;": "    { int __ss_ret = (0); __ss_cilk_sync(); return __ss_ret; }",
    }.get(line, line)


@needs_gcc
def test_rejected_construct_is_one_line_and_exit_status_2(tmp_path, capsys):
    from simsched.cli import main

    src = tmp_path / "bad.c"
    src.write_text("#include <cilk/cilk.h>\nint f(int);\nint main(void) {\n  int x = 0;\n"
                   "  cilk_spawn x++;\n  return f(x);\n}\n")  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(["cc", str(src), "-o", str(tmp_path / "bad")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        f"{src}:5:3: cilk_spawn: spawn of a non-call expression (only calls can be spawned)"
    )
    assert "\n" not in err


WCONVERSION = """\
#include <stddef.h>
#include <cilk/cilk.h>
#include "simsched.h"
static long total;
static void visit(long x) { total += x; }
static long fib(long n) {
    if (n < 2)
        return n;
    long a = cilk_spawn fib(n - 1);
    long b = fib(n - 2);
    cilk_sync;
    return a + b;
}
int main(int argc, char **argv) {
    (void)argv;
    long n = argc + 40;
    size_t m = (size_t)n;
    double a[64];
    SS_ROI_BEGIN();
    cilk_for (int i = 0; i < argc + 3; i++) visit(i);
    cilk_for (long i = n; i >= 2; i -= 3) visit(i);
    cilk_for (unsigned u = 0; u < 12u; u += 5) visit((long)u);
    cilk_for (unsigned char c = 250; c != 4; c++) visit(c);
    cilk_for (size_t k = 0; k <= m; k++) visit((long)k);
    cilk_for (int i = 0; i < 2.5; i++) visit(i);
    cilk_for (double *p = a; p != a + 64; p++) *p = 1.0;
    cilk_for (double *p = a + 63; p > a; p -= 2) *p = 2.0;
    SS_SPAWN(visit(fib(10)));
    SS_SYNC();
    SS_ROI_END();
    return (int)(total % 2);
}
"""


@needs_gcc
@pytest.mark.parametrize("name", ["wconversion.c", "cilk_forms.c"])
def test_rewritten_code_is_warning_free_under_wconversion(cache, tmp_path, name):
    """The cilk_for rewrite converted signed ends and values to unsigned long long and
    back implicitly: -Wall -Wextra -Wconversion -Werror failed a clean program on code
    its author never wrote."""
    src = DATA / name
    if name == "wconversion.c":
        src = tmp_path / name
        src.write_text(WCONVERSION)
    flags = ["-Wall", "-Wextra", "-Wconversion", "-Werror", "-c", str(src)]
    for backend in ("gcc", "valgrind"):
        obj = tmp_path / f"{backend}.o"
        assert compile_program([*flags, "-o", str(obj)], backend=backend) == 0
        assert obj.is_file()


@needs_gcc
def test_every_accepted_form_behaves_as_the_serial_elision(cache, tmp_path):
    src = DATA / "cilk_forms.c"
    plain = tmp_path / "forms_elision"
    subprocess.run(
        ["gcc", "-O2", f"-I{build.source_dir()}", str(src), "-o", str(plain)], check=True
    )
    rewritten = tmp_path / "forms_rewritten"
    assert (
        compile_program(
            ["-O2", "-Wall", "-Werror", str(src), "-o", str(rewritten)], backend="valgrind"
        )
        == 0
    )
    want = subprocess.run([str(plain)], capture_output=True, text=True, check=True).stdout
    got = subprocess.run([str(rewritten)], capture_output=True, text=True, check=True).stdout
    assert got == want and "|1|" in want  # one worker
    gcc_build = tmp_path / "forms_gcc"
    assert compile_program(["-O2", str(src), "-o", str(gcc_build)]) == 0
    res = capture(str(gcc_build), [], tmp_path / "forms.sst")
    assert res.header.n_frames > 100


def _dag(t: Trace) -> list[np.ndarray]:
    return [t.strands.frame, t.frames.parent, t.edges.src, t.edges.dst, t.edges.kind]


def _called_frames(t: Trace) -> np.ndarray:
    """Which frames were called, not spawned: their join edge enters the very next strand."""
    join = t.edges.kind == EDGE_JOIN
    called = np.zeros(t.header.n_frames, np.bool_)
    src, dst = t.edges.src[join], t.edges.dst[join]
    f = t.strands.frame[src]
    called[f[dst == src + 1]] = True
    called[0] = False
    return called


def _spawn_tree(t: Trace) -> np.ndarray:
    """The parents of the spawned frames, with every called frame merged into its caller."""
    called = _called_frames(t)
    parent = t.frames.parent
    up = np.arange(parent.shape[0])
    for f in range(1, parent.shape[0]):  # parents come before children
        up[f] = up[parent[f]] if called[f] else f
    keep = np.flatnonzero(~called)
    renum = np.full(parent.shape[0], -1)
    renum[keep] = np.arange(keep.shape[0])
    return np.where(keep == 0, -1, renum[up[parent[keep]]])


def _same_dag(tm: Trace, tc: Trace) -> None:
    """A Cilk capture has the marker capture's DAG, plus a frame per called Cilk function."""
    if not _called_frames(tc).any():
        for a, b in zip(_dag(tm), _dag(tc), strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_spawn_tree(tm), _spawn_tree(tc))


def _build_pair(bindir: Path, name: str, backend: str) -> tuple[Path, Path]:
    marker, cilk, _, flags, options = PAIRS[name]
    out = []
    for src, opts in ((marker, None), (cilk, options)):
        exe = bindir / f"{name}-{backend}-{'ss' if src == marker else 'cilk'}"
        if not exe.exists():
            args = ["-O2", "-no-pie", *flags, str(PROGRAMS / src), "-o", str(exe), "-lm"]
            assert compile_program(args, backend=backend, cilk=opts) == 0
        out.append(exe)
    return out[0], out[1]


@needs_gcc
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_cilk_program_captures_as_its_marker_version_gcc(cache, bindir, tmp_path, name):
    marker, cilk = _build_pair(bindir, name, "gcc")
    args = PAIRS[name][2]
    m = capture(str(marker), args, tmp_path / "m.sst")
    c = capture(str(cilk), args, tmp_path / "c.sst")
    with open_trace(m.out) as tm, open_trace(c.out) as tc:
        assert tm.header.n_frames > 10
        _same_dag(tm, tc)
    dm, dc = data_refs(m.out, marker), data_refs(c.out, cilk)
    assert sum(dm.values()) > 100
    assert dm == dc


@needs_gcc
@needs_valgrind
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_cilk_program_captures_as_its_marker_version_valgrind(cache, bindir, tmp_path, name):
    marker, cilk = _build_pair(bindir, name, "valgrind")
    args = PAIRS[name][2]
    m = capture(str(marker), args, tmp_path / "m.sst", backend="valgrind")
    c = capture(str(cilk), args, tmp_path / "c.sst", backend="valgrind")
    with open_trace(m.out) as tm, open_trace(c.out) as tc:
        _same_dag(tm, tc)
    # the two sources compile to different code, whose constant-pool loads differ
    assert data_refs(m.out, marker, constants=False) == data_refs(c.out, cilk, constants=False)


def _split_model(n: int, grain: int, split: str) -> tuple[list[int], int, int]:
    """Leaf sizes in order, spawns and syncing frames of a cilk_for over n iterations."""

    def helper(size: int) -> tuple[list[int], int, int]:
        if split == "binary":
            if size <= grain:
                return [size], 0, 0
            lo, hi = helper(size // 2), helper(size - size // 2)
            return lo[0] + hi[0], 2 + lo[1] + hi[1], 1 + lo[2] + hi[2]
        leaves, spawns, syncs = [], 0, 0
        while size > grain:
            sub = helper(size // 2)
            leaves += sub[0]
            spawns += 1 + sub[1]
            syncs += sub[2]
            size -= size // 2
        return leaves + [size], spawns, syncs + (1 if spawns else 0)

    return helper(n)


@needs_gcc
@pytest.mark.parametrize(
    "n, options, grain",
    [
        (1000, CilkOptions(), 125),  # OpenCilk: min(2048, n / 8) on one worker
        (1000, CilkOptions(workers=4), 31),
        (50000, CilkOptions(), 2048),
        (1000, CilkOptions(grain=100), 100),
        (1000, CilkOptions(grain=100, split="binary"), 100),
        (7, CilkOptions(), 1),
    ],
)
def test_cilk_for_splits_as_opencilk(cache, tmp_path, n, options, grain):
    src = tmp_path / "loop.c"
    src.write_text("#include <cilk/cilk.h>\n#include <stdlib.h>\nlong a[65536];\n"
                   "int main(int argc, char **argv) {\n  long n = atol(argv[1]);\n"
                   "  cilk_for (long i = 0; i < n; i++)\n    a[i] = i;\n  return 0;\n}\n")  # fmt: skip
    exe = tmp_path / "loop"
    assert compile_program(["-O2", "-no-pie", str(src), "-o", str(exe)], cilk=options) == 0
    res = capture(str(exe), [str(n)], tmp_path / "loop.sst")
    leaves, spawns, syncs = _split_model(n, grain, options.split)
    assert res.header.n_frames == 1 + spawns
    assert res.header.n_strands == 1 + 2 * spawns + syncs
    with open_trace(res.out) as t:
        per_strand = [int((t.strand_refs(s).addr < 2**32).sum()) for s in range(len(t.strands))]
    assert [k for k in per_strand if k] == leaves


def _same_output_as_elision(src: Path) -> tuple[str, Path]:
    """Build ``src`` with plain gcc (its serial elision) and with simsched cc; both print
    the same.  Returns that output and the simsched cc build."""
    plain = src.with_name(src.stem + "_elision")
    subprocess.run(
        ["gcc", "-O2", f"-I{build.source_dir()}", str(src), "-o", str(plain)], check=True
    )
    want = subprocess.run([str(plain)], capture_output=True, text=True, check=True).stdout
    exe = src.with_suffix("")
    assert compile_program(["-O2", str(src), "-o", str(exe)]) == 0
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout == want
    return want, exe


@needs_gcc
def test_cilk_for_range_wider_than_half_its_type_runs_every_iteration(cache, tmp_path):
    # the distance from the first value to the bound does not fit the loop variable's
    # type (4e9 for an int, 1.2e19 for a long long): it was subtracted in that type, which
    # overflowed, and the int loops ran no iteration at all
    src = tmp_path / "wide.c"
    src.write_text("#include <cilk/cilk.h>\n#include <stdio.h>\nlong h, k;\n"
                   "int main(void) {\n"
                   "  cilk_for (int i = -2000000000; i < 2000000000; i += 500000000)\n"
                   "    { h = 31 * h + i; k++; }\n"
                   "  cilk_for (int i = 2000000000; i > -2000000000; i -= 500000000)\n"
                   "    { h = 31 * h + i; k++; }\n"
                   "  cilk_for (long long i = -6000000000000000000; i <= 6000000000000000000;\n"
                   "            i += 3000000000000000000) { h = 31 * h + i; k++; }\n"
                   '  printf("%ld %ld\\n", k, h);\n  return 0;\n}\n')  # fmt: skip
    want, exe = _same_output_as_elision(src)
    assert want.startswith("21 ")
    res = capture(str(exe), [], tmp_path / "wide.sst")
    # grain 1: 8, 8 and 5 leaves, so 7 + 7 + 4 spawned halves below main
    assert res.header.n_frames == 1 + 7 + 7 + 4


@needs_gcc
def test_cilk_for_compares_with_its_bound_as_c_does(cache, tmp_path):
    # the bound was converted to the loop variable's type before the count: an unsigned
    # char loop to an int -1 ran 255 times and an int loop from -3 to an unsigned 3 ran 6,
    # where C (and the plain build) compares in the usual arithmetic conversions: none;
    # a signed char from -64 to an unsigned 4294967295 (-1 there) ran 2^32 + 63 times,
    # its first value converted to unsigned long long for the distance, not to unsigned
    src = tmp_path / "bound.c"
    src.write_text("#include <cilk/cilk.h>\n#include <stdio.h>\nlong k;\n"
                   "int main(int argc, char **argv) {\n"
                   "  volatile int n = -1; volatile unsigned u = 3;\n"
                   "  volatile long w = 100; volatile unsigned long z = 5;\n"
                   "  volatile unsigned m = 4294967295u;\n"
                   "  cilk_for (unsigned char i = 0; i < n; i++) k += 1;\n"
                   "  cilk_for (int i = -3; i < u; i++) k += 1000;\n"
                   "  cilk_for (short i = 0; i < w; i++) k += 1000000;\n"
                   "  cilk_for (int i = 0; z > i; i++) k += 1000000000;\n"
                   "  cilk_for (signed char i = -64; i < m; i++) k += 1000000000000;\n"
                   '  printf("%ld\\n", k);\n  return 0;\n}\n')  # fmt: skip
    want, exe = _same_output_as_elision(src)
    assert want == "63005100000000\n"
    res = capture(str(exe), [], tmp_path / "bound.sst")
    # only the two loops C runs split, at OpenCilk's grain min(2048, n / 8) on one worker
    spawns = sum(_split_model(n, g, "opencilk")[1] for n, g in [(100, 12), (5, 1), (63, 7)])
    assert res.header.n_frames == 1 + spawns


@needs_gcc
def test_cilk_for_counts_near_the_type_limits_and_down_or_around_to_a_not_equal_bound(
    cache, tmp_path
):
    # found by the differential fuzzer (test_cilk_fuzz.py): a < loop whose distance and
    # step are near 2^64 ran no iteration ((diff + st - 1) / st overflowed); a != loop
    # with a negative step (i += s, s = -1) ran none; an unsigned char != loop that wraps
    # from 255 to 0 on its way to the bound ran 2^64 - 246 iterations instead of 10
    src = tmp_path / "limits.c"
    src.write_text("#include <cilk/cilk.h>\n#include <stdio.h>\n"
                   "unsigned long long h, k;\n"
                   "int main(void) {\n"
                   "  volatile signed char s = -1; volatile long ps = -2; int a[64];\n"
                   "  cilk_for (long long i = -9223372036854775807LL - 1;\n"
                   "            i < 9223372036854775806LL; i += 9223372036854775807LL)\n"
                   "    { h = 31 * h + i; k++; }\n"
                   "  cilk_for (unsigned long long i = 0; i < 18446744073709551615ULL;\n"
                   "            i += 18446744073709551615ULL) { h = 31 * h + i; k++; }\n"
                   "  cilk_for (unsigned i = 10; i != 0; i += s) { h = 31 * h + i; k++; }\n"
                   "  cilk_for (int i = 0; i != 10; i -= s) { h = 31 * h + i; k++; }\n"
                   "  cilk_for (int *p = a + 61; a + 31 != p; p += ps) { h = 31 * h + (p - a); k++; }\n"
                   "  cilk_for (unsigned char c = 250; c != 4; c++) { h = 31 * h + c; k++; }\n"
                   "  cilk_for (unsigned short c = 3; c != 65533; c -= 2) { h = 31 * h + c; k++; }\n"
                   '  printf("%llu %llu\\n", k, h);\n  return 0;\n}\n')  # fmt: skip
    want, _ = _same_output_as_elision(src)
    assert want.startswith(f"{2 + 1 + 10 + 10 + 15 + 10 + 3} ")


@needs_gcc
def test_cilk_for_with_a_floating_bound_rounds_its_distance_up(cache, tmp_path):
    # int i = 0; i < 2.5 runs 0, 1 and 2: the distance 2.5 was truncated to 2
    loops = [
        "cilk_for (int i = 0; i < d; i++)",
        "cilk_for (int i = 10; i > d; i -= 3)",
        "cilk_for (int i = 0; i <= d; i++)",
    ]
    body = "".join(f"  {loop} {{ h = 31 * h + i; k++; }}\n" for loop in loops)
    src = tmp_path / "float.c"
    src.write_text(
        "#include <cilk/cilk.h>\n#include <stdio.h>\nlong h, k;\n"
        f"int main(void) {{\n  volatile double d = 2.5;\n{body}"
        '  printf("%ld %ld\\n", k, h);\n  return 0;\n}\n'
    )
    want, _ = _same_output_as_elision(src)
    assert want.startswith("9 ")


@needs_gcc
def test_opencilk_split_of_heat_has_the_references_of_the_marker_version(cache, bindir, tmp_path):
    marker, _ = _build_pair(bindir, "heat", "gcc")
    exe = bindir / "heat-opencilk"
    args = ["-O2", "-no-pie", str(PROGRAMS / "cilk" / "heat.c"), "-o", str(exe), "-lm"]
    assert compile_program(args) == 0
    m = capture(str(marker), ["32", "2", "4"], tmp_path / "m.sst")
    c = capture(str(exe), ["32", "2", "4"], tmp_path / "c.sst")
    _, spawns, syncs = _split_model(32, 4, "opencilk")
    # Two iterations; each spawns one sweep frame whose cilk_for spawns ``spawns`` more.
    assert c.header.n_frames == 1 + 2 * (1 + spawns)
    # Per iteration: main's continuation and post-sync strands, and the sweep frame's
    # first strand plus the strands its loop splitting makes.
    assert c.header.n_strands == 1 + 2 * (3 + 2 * spawns + syncs)
    assert m.header.n_frames != c.header.n_frames
    assert data_refs(m.out, marker) == data_refs(c.out, exe)


@needs_gcc
def test_laws_warns_on_heat_split_as_opencilk_splits_it(cache, bindir, tmp_path):
    # [LAWS15] Eq. 1 assumes an even division; OpenCilk's split spawns 1/2, 1/4, ... of the
    # rows from one frame, so the allocator gives one socket most of them.  The binary
    # split is the paper programs' shape and fits Eq. 1 exactly.
    import json

    import simsched
    from tests.engine.machines import TWO_BY_TWO

    four_by_two = {**TWO_BY_TWO, "name": "test-4x2", "sockets": 4}
    _, binary = _build_pair(bindir, "heat", "gcc")
    exe = bindir / "heat-opencilk"
    if not exe.exists():
        args = ["-O2", "-no-pie", str(PROGRAMS / "cilk" / "heat.c"), "-o", str(exe), "-lm"]
        assert compile_program(args) == 0
    for prog, uneven in ((exe, True), (binary, False)):
        res = capture(str(prog), ["64", "2", "4"], tmp_path / f"{prog.name}.sst")
        rec = simsched.run(res.out, four_by_two, "laws", speedup=False).record
        codes = [w["code"] for w in json.loads(rec["warnings"])]
        shares = json.loads(rec["allocator_shares"])
        cab = simsched.run(res.out, four_by_two, "cab", speedup=False).record
        # CAB measures B = 1 on OpenCilk's chain of halves (no B-ary division): BL 0, WS
        assert (cab["bl_reason"] == "no-division") == uneven
        if uneven:
            assert cab["bl"] == 0 and "cilk-for-split binary" in cab["warnings"]
            assert codes == ["uneven-allocation"]
            assert max(shares) > 0.5 and rec["allocator_mismatch"] > 0.5
        else:
            assert codes == []
            assert shares == [0.25] * 4 and rec["allocator_mismatch"] == 0.0


@needs_gcc
def test_acceptance_unmodified_cilk_program_through_the_cli(cache, tmp_path, capsys, monkeypatch):
    from simsched.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.c").write_text(
        "#include <cilk/cilk.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
        "static long sum(const long *a, long n)\n{\n    if (n < 64) {\n        long s = 0;\n"
        "        for (long i = 0; i < n; i++)\n            s += a[i];\n        return s;\n    }\n"
        "    long x = cilk_spawn sum(a, n / 2);\n    long y = sum(a + n / 2, n - n / 2);\n"
        "    cilk_sync;\n    return x + y;\n}\n\nint main(void)\n{\n    long n = 10000;\n"
        "    long *a = malloc(n * sizeof *a);\n    cilk_for (long i = 0; i < n; i++)\n"
        "        a[i] = i;\n    printf(\"%ld\\n\", sum(a, n));\n    free(a);\n    return 0;\n}\n"
    )  # fmt: skip
    for argv in (["cc", "-O2", "prog.c", "-o", "prog"], ["capture", "-o", "p.sst", "--", "./prog"],
                 ["trace", "validate", "p.sst"]):  # fmt: skip
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code in (0, None), argv
    out = capsys.readouterr()
    assert "p.sst: ok" in out.out + out.err
    with open_trace(tmp_path / "p.sst") as t:
        assert t.header.n_frames > 100


@needs_gcc
def test_show_rewrite_joins_a_macro_expansion_spread_over_lines(tmp_path, capsys):
    from simsched.cli import main

    src = tmp_path / "a.c"
    src.write_text("#include <assert.h>\n#include <cilk/cilk.h>\nint f(int);\nint g(int x)\n{\n"
                   "    int y = cilk_spawn f(x);\n    cilk_sync;\n    assert(y > 0);\n    return y;\n}\n")  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(["cc", "--show-rewrite", str(src), "-O2"])
    assert e.value.code == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "#include <assert.h>" and out[6] == "    __ss_cilk_sync();"
    assert "__assert_fail" in out[7] and "y > 0" in out[7]
    # the assert separates the return from the cilk_sync: the implicit sync is written
    assert out[8] == "    { int __ss_ret = (y); __ss_cilk_sync(); return __ss_ret; }"


def _program_with_a_header(tmp_path, monkeypatch):
    """p.c, a Cilk source including dep.h, in the current folder (tmp_path)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dep.h").write_text("#define N 4\n")
    (tmp_path / "p.c").write_text('#include <cilk/cilk.h>\n#include "dep.h"\nvoid f(long);\n'
                                  "void g(void) { cilk_spawn f(N); }\n")  # fmt: skip


@needs_gcc
def test_dependency_files_of_a_rewritten_source_name_the_original(tmp_path, monkeypatch):
    _program_with_a_header(tmp_path, monkeypatch)
    (tmp_path / "o").mkdir()
    assert compile_program(["-MMD", "-MP", "-c", "p.c", "-o", "o/p.o"], backend="valgrind") == 0
    deps = (tmp_path / "o" / "p.d").read_text()
    assert deps.startswith("o/p.o: p.c") and "dep.h" in deps
    # no prerequisite is the rewritten (preprocessed) file; the check is per file name, as
    # the folders of the capture headers may contain ".i" (a temporary "tmp.i8...")
    prerequisites = deps.split("\n\n")[0].split(":", 1)[1].replace("\\\n", " ").split()
    assert not [f for f in prerequisites if f.endswith(".i")], prerequisites
    assert (tmp_path / "o" / "p.o").is_file()


@needs_gcc
def test_preprocess_only_commands_write_their_output(tmp_path, monkeypatch):
    # gcc -E and -MM ran on the rewritten unit, already preprocessed (-x cpp-output): they
    # wrote nothing at all and exited 0 (a Makefile's dependency rule, ccache's hash of -E)
    _program_with_a_header(tmp_path, monkeypatch)
    assert compile_program(["-E", "p.c", "-o", "p.i"], backend="valgrind") == 0
    unit = (tmp_path / "p.i").read_text()
    assert (
        "__ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(4); __ss_cilk_spawn_end();"
        in unit
    )  # the unit gcc compiles
    assert compile_program(["-c", "-x", "cpp-output", "p.i", "-o", "p.o"]) == 0
    assert compile_program(["-MM", "p.c", "-MF", "p.d"], backend="valgrind") == 0
    assert (tmp_path / "p.d").read_text().replace("\\\n", " ").split()[:2] == ["p.o:", "p.c"]
    assert "dep.h" in (tmp_path / "p.d").read_text()


@needs_gcc
def test_cilk_source_from_standard_input_is_rewritten(cache, tmp_path, monkeypatch):
    # gcc -x c - reads the source from standard input; simsched cc passed that on
    # unrewritten, so the program ran with no markers and its capture failed
    import io
    import types

    fib = (PROGRAMS / "cilk" / "fib.c").read_bytes()
    from_file = tmp_path / "fib-file"
    assert compile_program(["-O2", str(PROGRAMS / "cilk" / "fib.c"), "-o", str(from_file)]) == 0
    piped = tmp_path / "fib-stdin"
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(fib)))
    monkeypatch.chdir(PROGRAMS / "cilk")  # its quoted include, found as gcc finds it
    assert compile_program(["-O2", "-x", "c", "-", "-o", str(piped)]) == 0
    a = capture(str(from_file), ["12", "4"], tmp_path / "a.sst")
    b = capture(str(piped), ["12", "4"], tmp_path / "b.sst")
    assert b.header.n_frames == a.header.n_frames > 1
    assert b.header.n_strands == a.header.n_strands
    # a construct that cannot be rewritten is located in <stdin>, as gcc names it
    bad = b"#include <cilk/cilk.h>\nint f(int);\nint g(void) {\n  return cilk_spawn f(1);\n}\n"
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(bad)))
    with pytest.raises(CaptureError, match=r"^<stdin>:4:\d+: cilk_spawn"):
        compile_program(["-x", "c", "-", "-c", "-o", str(tmp_path / "bad.o")])
