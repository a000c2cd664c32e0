"""Every benchmark script runs at a tiny size, prints one JSON line and cleans up after itself.

The benchmarks are not timed here (their figures come from full-size runs, recorded in
docs/performance.md); this only keeps them working: a script that no longer runs against
the current code, prints its record twice, leaves scratch traces behind, or reports its
figures without the process's CPU time, wall time and load average beside them fails CI.
The figures that do not depend on time (agreement with the reference models, stored
sizes) are checked at the tiny size too (``FIGURES``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

# The smallest sizes at which each script still goes through all of its default steps.
TINY: dict[str, list[str]] = {
    "bench_capture.py": ["--n", "4096", "--lackey-n", "1024", "--repeat", "1", "--skip-valgrind"],
    "bench_cilk.py": ["--lines", "50", "--rounds", "1"],
    "bench_coherence.py": ["--n", "2048", "--cores", "4", "--repeat", "1", "--rounds", "1"],
    "bench_engine.py": ["--n", "4096", "--cores=", "--machines", "itrs-scaling-16"],
    "bench_firstrun.py": ["--machine", "itrs-scaling-2"],
    "bench_manycore.py": ["--cores", "4,512", "--n", "6", "--repeat", "1"],
    # a two-level preset: the three-level default takes 20 s of its own to compile
    "bench_memory.py": ["--refs", "100000", "--repeat", "1", "--preset", "itrs-scaling-2"],
    "bench_profile.py": ["--refs", "100000", "--n", "4096", "--repeat", "1"],
    "bench_sampling.py": ["--iters", "8", "--samples", "2"],
    "bench_startup.py": ["--repeat", "1"],
    "bench_sweep.py": ["--points", "2", "--work", "1", "--sleep", "0.05"],
    "bench_trace.py": [
        "--n",
        "4096",
        "--big-refs",
        "2000000",
        "--repeat-heat",
        "66x34x3",
        "--iters-heat",
        "34x18",
    ],
}
NEEDS_GCC = {"bench_capture.py", "bench_cilk.py"}
# The figures of a tiny run that do not depend on time or load, and so must hold at any
# size: agreement with the reference models, and stored sizes (key path, expected test).
FIGURES: dict[str, list[tuple[str, object]]] = {
    "bench_memory.py": [
        ("a_loads_only_misses_equal", True),  # the kernels against pycachesim
        ("b_loads_only_misses_equal", True),
        ("ooo_misses_equal", True),  # out-of-order cores miss as blocking ones do
    ],
    "bench_profile.py": [("ms_misses_equal_fa", True)],  # LruTree against SetAssoc
    # the machine's and its one-core baseline's modules, each compiling ``_serve`` once
    "bench_firstrun.py": [("modules", 2), ("met.one_serve_signature", True)],
    "bench_trace.py": [("met.size", True), ("met.iters_size", True)],
    "bench_capture.py": [("gcc_stored_bytes_per_ref", lambda v: 0 < v <= 1.5)],
}
SPECS = Path(__file__).resolve().parents[2] / "experiments"
# Scripts with other modes than their default: (script, arguments, the record's name).
MODES: list[tuple[str, list[str], str]] = [
    (
        "bench_memory.py",
        ["--stream-only", "--refs", "100000", "--repeat", "1", "--preset", "itrs-scaling-2"],
        "memory-stream",
    ),
    (
        "bench_sampling.py",
        ["--coverage", "--nx", "258", "--total", "12", "--windows", "10", "--samples", "2"],
        "sampling-coverage",
    ),
    (
        "bench_sampling.py",
        ["--rules", "--ks", "5", "--precisions", "1", "--window", "20"],
        "sampling-rules",
    ),
    (
        "bench_sampling.py",
        [
            "--study",
            str(SPECS / "laws" / "small.yaml"),
            "--schedulers",
            "ws,laws",
            "--samples",
            "2",
        ],
        "sampling-study",
    ),
]


def _env(tmp: Path) -> dict[str, str]:
    """The test's environment, with scratch files going to ``tmp``."""
    tmp.mkdir()
    return dict(os.environ, TMPDIR=str(tmp))


def test_every_benchmark_has_a_tiny_run() -> None:
    assert sorted(p.name for p in BENCH.glob("bench_*.py")) == sorted(TINY)


def _run_tiny(script: str, args: list[str], name: str, tmp_path: Path) -> dict:
    """Run ``script`` with ``args``: exit 0, one JSON line named ``name``, no scratch left."""
    if script in NEEDS_GCC and shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        cwd=work,
        env=_env(tmp),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-3000:]
    record = json.loads(lines[0])
    assert record["bench"] == name
    # CPU time beside wall time, and the load both were measured under (_bench.emit)
    process = record["process"]
    host = {f"host_{w}_ms_{e}" for w in ("python", "gather") for e in ("start", "end")}
    assert set(process) == {"cpu_s", "wall_s", "loadavg_1m_start", "loadavg_1m_end", *host}
    assert all(isinstance(v, float | int) and v >= 0 for v in process.values()), process
    assert all(process[k] > 0 for k in host), process  # the host's speed, both ends
    assert process["cpu_s"] > 0 and process["wall_s"] > 0, process
    # Dask keeps one shared scratch folder in TMPDIR by design (bench_sweep's LocalCluster)
    left = sorted(p.name for p in tmp.iterdir() if p.name != "dask-scratch-space")
    assert left == [], "scratch files left behind"
    return record


@pytest.mark.parametrize("script", sorted(TINY))
def test_prints_one_json_line(script: str, tmp_path: Path) -> None:
    name = script.removeprefix("bench_").removesuffix(".py")
    record = _run_tiny(script, TINY[script], name, tmp_path)
    for path, expected in FIGURES.get(script, []):
        value: object = record
        for key in path.split("."):
            assert isinstance(value, dict) and key in value, f"no figure {path}"
            value = value[key]
        ok = expected(value) if callable(expected) else value == expected
        assert ok, f"{script}: {path} = {value!r}"


@pytest.mark.parametrize(("script", "args", "name"), MODES, ids=[m[2] for m in MODES])
def test_other_modes_print_one_json_line(
    script: str, args: list[str], name: str, tmp_path: Path
) -> None:
    record = _run_tiny(script, args, name, tmp_path)
    if name == "memory-stream":  # the preset's first core of each socket first, all served
        assert record["preset_stream_cores"] == 2 and record["preset_stream_refs"] == 100000
        assert len(record["preset_stream_misses"]) == 2  # itrs-scaling-2: L1 and L2
        return
    if name == "sampling-rules":  # the committed study's rows, replayed by the rule
        assert record["pairs"] == record["reproduced"] == 28
        assert [c["scheduler"] for c in record["cells"]] == ["cats", "laws", "laws-nc", "ws"]
        return
    # the per-run detail is inside the one record, not on lines of its own
    rows = record["cells"] if name == "sampling-coverage" else record["runs"]
    assert len(rows) == (4 if name == "sampling-coverage" else 8)


def test_the_sampling_rules_table_of_the_docs_is_the_benchmarks(tmp_path: Path) -> None:
    """docs/engine.md §7 ("The rule's settings") quotes ``bench_sampling.py --rules`` on the
    committed detailed and sampled rows, which take no replay: every row of its table must
    come out of the script as written."""
    record = _run_tiny("bench_sampling.py", ["--rules"], "sampling-rules", tmp_path)
    assert record["pairs"] == record["reproduced"] == 28
    docs = (BENCH.parent / "docs" / "engine.md").read_text()
    order = {"ws": 0, "laws": 1, "laws-nc": 2, "cats": 3}
    lines = []
    for c in sorted(record["cells"], key=lambda c: order[c["scheduler"]]):
        missed = c["outside_ci95"]
        names = ", ".join(w.replace("sor", "SOR").replace("p", "P") for w in missed) or "none"
        lines.append(
            f"  | {c['scheduler'].upper()} | {c['precision_pct']:g} % | {c['samples']} | "
            f"{len(missed)} ({names}) | {c['max_abs_error_pct']:.2f} % | "
            f"{c['detailed_iterations']:,} of {c['iterations']:,} | "
            f"{100 * c['window_coverage']:.1f} % of {c['windows']} | "
            f"{c['window_max_abs_error_pct']:.2f} % | {c['window_mean_detailed']:.1f} |"
        )
    assert "\n".join(lines) in docs, "\n".join(lines)


def test_ctrl_c_ends_with_one_line_and_no_scratch(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / "bench_trace.py")],  # full size: minutes
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp),
    )
    deadline = time.monotonic() + 120
    while not any(tmp.glob("simsched-bench-*/mergesort-*")) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert (out, err) == ("", "bench_trace.py: interrupted\n")
    assert sorted(tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        # named by the script before any work
        ("bench_firstrun.py", ["--machine", "nosuch"], "bench_firstrun.py: machine 'nosuch'"),
        ("bench_sampling.py", ["--scheduler", "nosuch"], "unknown scheduler 'nosuch'"),
        ("bench_sampling.py", ["--rules", "--detailed", "nosuch"], "nosuch: no seed-0 rows"),
        # named by a child process (simsched's status 2), passed on as its one line
        ("bench_engine.py", ["--small", "--machines", "nosuch"], "machine 'nosuch'"),
        ("bench_coherence.py", ["--cores", "4,x"], "argument --cores: '4,x' is not"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    script: str, args: list[str], says: str, tmp_path: Path
) -> None:
    """Before: a machine or scheduler that does not exist ended in a traceback and exit 1
    (CalledProcessError, ConfigError, RuntimeError or ValueError)."""
    tmp = tmp_path / "tmp"
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # a folder named as the machine would be read as a machine file
        env=_env(tmp),
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr and says in proc.stderr.splitlines()[-1]
    if script != "bench_coherence.py":  # argparse prints its usage above the line
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not tmp.exists() or sorted(tmp.iterdir()) == []


@pytest.mark.parametrize("arg", ["--refs", "--repeat"])
def test_a_count_below_one_is_refused_by_name(arg: str, tmp_path: Path) -> None:
    # --refs 0 ran a stream of one turn and --repeat 0 ended in min()'s traceback
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_memory.py"), "--stream-only", arg, "0"],
        capture_output=True,
        text=True,
        env=_env(tmp_path / "tmp"),
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"argument {arg}: '0' is not a positive integer" in proc.stderr
    assert "Traceback" not in proc.stderr
