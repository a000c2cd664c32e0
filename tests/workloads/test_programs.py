"""The C programs of traces/programs: the Makefile builds them all, and fresh captures of the
iterative and data-parallel ones have their generators' DAG shapes (slow: builds and runs
valgrind)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from simsched.capture import capture
from simsched.trace import summary
from tests.workloads._compare import assert_shape_of_capture

PROGRAMS = Path(__file__).resolve().parents[2] / "traces" / "programs"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("gcc") is None
        or shutil.which("valgrind") is None
        or shutil.which("make") is None,
        reason="needs make, gcc and valgrind",
    ),
]


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    out = tmp_path_factory.mktemp("programs") / "bin"  # OUT=DIR makes DIR
    subprocess.run(
        ["make", "-s", "-C", str(PROGRAMS), f"OUT={out}"], check=True, capture_output=True
    )
    return out


def test_makefile_builds_every_program(bindir):
    text = (PROGRAMS / "Makefile").read_text()
    names = []
    for var in ("SIMPLE", "VARIANTS"):
        names += re.search(rf"^{var} := (.*)$", text, re.M).group(1).split()
    assert {"ck", "datapar", "ge-ir", "9p-ir", "6p-ir", "25p-ir"} <= set(names)
    for name in names:
        assert (bindir / name).is_file(), name


CASES = [
    ("sor-ir", ["40", "2", "4"], "sor", dict(nx=42, ny=42, iters=2, cutoff=4, irregular=True)),
    (
        "25p-ir",
        ["12", "2", "2"],
        "25p",
        dict(nx=20, ny=20, nz=20, iters=2, cutoff=2, irregular=True),
    ),
    ("ge-ir", ["30", "3", "12"], "ge", dict(n=30, cutoff=3, steps=12, irregular=True)),
    ("datapar", ["6", "512", "2"], "datapar", dict(n=6, elems=512, reps=2)),
]


@pytest.mark.parametrize(("program", "args", "name", "params"), CASES, ids=[c[0] for c in CASES])
def test_fresh_capture_has_the_generators_shape(tmp_path, bindir, program, args, name, params):
    out = tmp_path / "c.sst"
    capture(str(bindir / program), args, out, backend="valgrind")
    assert_shape_of_capture(tmp_path, out, name, 0.05, init=False, **params)


def test_ck_captures_an_irregular_search(tmp_path, bindir):
    out = tmp_path / "ck.sst"
    capture(str(bindir / "ck"), ["4", "2", "2"], out, backend="valgrind")
    s = summary(out)
    assert s["iterations"] == 0
    assert s["branching"]["min"] == 1 and s["branching"]["max"] >= 4
    assert s["branching_by_level"][0] == {
        "level": 0,
        "groups": 1,
        "min": 2,
        "mean": 2.0,
        "max": 2,
    }  # main: one root search per move
