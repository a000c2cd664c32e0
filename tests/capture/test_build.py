"""Tests of simsched.capture.build: the cache, the runtime builds, missing tools."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from simsched.capture import build, cc_command
from simsched.errors import CaptureError

from .conftest import needs_gcc, needs_valgrind


@needs_gcc
def test_gcc_runtime_is_built_once_and_cached(cache):
    rt, _ = build.gcc_runtime()
    assert rt.parent == cache
    assert (rt / "libtsan_preinit.o").is_file() and (rt / "libtsan.a").is_file()
    stamp = (rt / "libtsan_preinit.o").stat().st_mtime_ns
    rt2, _ = build.gcc_runtime()
    assert rt2 == rt and (rt2 / "libtsan_preinit.o").stat().st_mtime_ns == stamp


@needs_gcc
def test_cc_command_instruments_and_links_the_runtime(cache):
    rt, zstd = build.gcc_runtime()
    cmd = cc_command(["-O2", "x.c", "-o", "x"])
    assert "-fsanitize=thread" in cmd and "-fsanitize-coverage=trace-pc" in cmd
    assert f"-L{rt}" in cmd
    assert any(a.startswith("-Wl,") and "--wrap=memcpy" in a for a in cmd)
    assert ("-lzstd" in cmd) == zstd
    compile_only = cc_command(["-c", "x.c"])
    assert f"-L{rt}" not in compile_only and "-fsanitize=thread" in compile_only


CXX_PROGRAM = """\
#include <cstdio>
#include <vector>
#include "simsched.h"
static long sum(const std::vector<long> &v, std::size_t lo, std::size_t hi) {
    if (hi - lo <= 4) {
        long s = 0;
        for (std::size_t i = lo; i < hi; i++)
            s += v[i];
        return s;
    }
    long a = 0, b = 0;
    std::size_t mid = lo + (hi - lo) / 2;
    SS_SPAWN(a = sum(v, lo, mid));
    SS_SPAWN(b = sum(v, mid, hi));
    SS_SYNC();
    return a + b;
}
int main() {
    std::vector<long> v(64, 1);
    SS_ROI_BEGIN();
    long s = sum(v, 0, v.size());
    SS_ROI_END();
    std::printf("%ld\\n", s);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_a_cxx_program_builds_and_captures_with_simsched_cc_gxx(cache, monkeypatch, tmp_path):
    """SIMSCHED_CC=g++ (docs/capture.md) compiled the C runtime as C++, which failed: no
    C++ program could be built; its markers are also warning-free under -Wconversion."""
    from simsched.capture import capture, compile_program

    monkeypatch.setenv("SIMSCHED_CC", "g++")
    src, prog = tmp_path / "sum.cpp", tmp_path / "sum"
    src.write_text(CXX_PROGRAM)
    flags = ["-O2", "-Wall", "-Wextra", "-Wconversion", "-Wsign-conversion", "-Werror"]
    assert compile_program([*flags, str(src), "-o", str(prog)]) == 0
    res = capture(str(prog), [], tmp_path / "sum.sst")
    assert res.header.n_frames == 31  # the 15 inner calls spawn 2 each, and main's frame
    assert res.header.n_refs > 0


def test_missing_compiler_names_the_install_command(cache, monkeypatch):
    monkeypatch.setenv("SIMSCHED_CC", "no-such-compiler-simsched")
    with pytest.raises(CaptureError, match="apt-get install -y gcc"):
        build.compiler()


def test_missing_valgrind_names_the_install_command(cache, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CaptureError, match="apt-get install -y valgrind"):
        build.valgrind_tool()


@needs_gcc
def test_a_cache_folder_that_cannot_be_made_is_named_as_the_cache(monkeypatch, tmp_path):
    # the message was the bare OSError: "/x/file: File exists"
    (tmp_path / "file").write_text("")
    for root in (tmp_path / "file", tmp_path / "file" / "sub"):
        monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(root))
        with pytest.raises(CaptureError) as info:
            build.gcc_runtime()
        msg = str(info.value)
        assert msg.startswith(f"{root}: cannot build the capture backend's native parts")
        assert "SIMSCHED_CACHE_DIR" in msg


def test_missing_sources_are_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMSCHED_CAPTURE_SRC", str(tmp_path))
    with pytest.raises(CaptureError, match="SIMSCHED_CAPTURE_SRC"):
        build.source_dir()


@needs_gcc
@needs_valgrind
def test_valgrind_tool_lib_dir_has_the_tool_and_stock_files(cache):
    lib = build.valgrind_tool()
    assert (lib / "simsched-amd64-linux").is_file()
    assert (lib / "vgpreload_core-amd64-linux.so").exists()
    assert build.valgrind_tool() == lib


@needs_valgrind
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_valgrind_tool_builds_with_simsched_cc_gxx(monkeypatch, tmp_path):
    """SIMSCHED_CC=g++ compiled the tool's C source as C++, which failed on valgrind's
    headers: the valgrind backend could not be used with the documented C++ driver."""
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path))  # a tool not built yet
    monkeypatch.setenv("SIMSCHED_CC", "g++")
    lib = build.valgrind_tool()
    assert lib.parent == tmp_path and (lib / "simsched-amd64-linux").is_file()


MARKERS_C = """\
#include "simsched.h"
static void leaf(void) {}
int main(void) {
    SS_ROI_BEGIN();
    SS_SPAWN(leaf());
    SS_SYNC();
    SS_ROI_END();
    return 0;
}
"""


@needs_gcc
@pytest.mark.parametrize(
    ("compiler", "suffix", "flag"),
    [("gcc", ".c", "-Wmissing-prototypes"), ("g++", ".cpp", "-Wmissing-declarations")],
)
def test_the_marker_header_builds_with_missing_prototype_warnings_as_errors(
    tmp_path, compiler, suffix, flag
):
    """simsched.h defined simsched_marker without declaring it first: a program that
    builds with -Wmissing-prototypes (C++: -Wmissing-declarations) -Werror failed on it."""
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    src = tmp_path / f"m{suffix}"
    src.write_text(MARKERS_C)
    cmd = [compiler, "-Wall", "-Wextra", flag, "-Werror", f"-I{build.source_dir()}", "-c"]
    proc = subprocess.run([*cmd, str(src), "-o", str(tmp_path / "m.o")], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
