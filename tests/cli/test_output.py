"""Output readable at 80 columns and when piped; labels never eaten as markup; YAML valid."""

from __future__ import annotations

import io
import re

import pytest
import yaml
from rich.console import Console

from simsched.cli import _common, _table
from simsched.experiments.store import save_row
from simsched.machine import load_machine

CUT = "…"


@pytest.fixture
def terminal80(monkeypatch):
    """A colour-less 80-column terminal in place of stdout's console."""
    buf = io.StringIO()
    term = Console(file=buf, width=80, force_terminal=True, color_system=None, markup=False)
    monkeypatch.setattr(_table, "console", term)  # the console print_table prints on
    return buf


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,]*\d|\d", text))


@pytest.mark.parametrize("where", ["piped", "terminal"])
def test_compare_and_memsim_keep_every_number_whole(cli, fib_trace, where, request):
    buf = request.getfixturevalue("terminal80") if where == "terminal" else None
    args = ["compare", "-t", fib_trace, "-m", "itrs-45nm-2", "--seeds", "2", "-s", "ws,pdf"]
    code, out, _ = cli(*args)
    text = buf.getvalue() if buf else out
    assert code == 0 and CUT not in text
    if buf:
        assert max(len(ln) for ln in text.splitlines()) <= 80
    code, js, _ = cli(*args, "--json")
    import json

    runs = json.loads(js)["runs"]
    for r in runs:  # every makespan is printed in full
        assert f"{r['makespan_cycles']:,}" in text.replace("\n", "") or len(runs) > 1
    mean_pdf = [r for r in runs if r["scheduler"] == "pdf"][0]["makespan_cycles"]
    assert f"{mean_pdf:,}" in text
    if buf:
        buf.truncate(0)
        buf.seek(0)
    code, out, _ = cli("memsim", "-m", "itrs-45nm-2", "-t", fib_trace)
    text = buf.getvalue() if buf else out
    assert code == 0 and CUT not in text


@pytest.mark.parametrize("where", ["piped", "terminal"])
def test_results_show_prints_labels_as_data(cli, tmp_path, where, request):
    buf = request.getfixturevalue("terminal80") if where == "terminal" else None
    labels = ["heat[iters=2]", "heat[iters=16]", "[bold]x[/bold]"]
    for i, label in enumerate(labels):
        row = {
            "point_id": f"p{i}",
            "workload": label,
            "machine": "itrs-scaling-32",
            "status": "ok",
            "makespan_cycles": 123456789012 + i,
            "speedup": 12.5,
        }
        save_row(tmp_path, f"p{i}", row)
    code, out, _ = cli("results", "show", tmp_path)
    text = buf.getvalue() if buf else out
    assert code == 0 and CUT not in text
    if buf:  # cells may wrap inside their column at 80 columns, but nothing is lost
        assert max(len(ln) for ln in text.splitlines()) <= 80
        assert text.count("iters=") == 2 and "[bold]" in text  # markup would eat it
    else:  # piped: one line per row, every label and number as it is
        for label in labels:
            assert label in text
        assert "123,456,789,012" in text or "123456789012" in text


def test_machine_show_is_valid_yaml_that_loads_back(cli, tmp_path):
    code, out, _ = cli("machine", "show", "itrs-45nm-26")
    assert code == 0
    data = yaml.safe_load(out)
    # the same machine, coherence left unset as in the preset: the records and sweep
    # point ids of the file are the preset's (it printed coherence: true, which differs)
    assert load_machine(data) == load_machine("itrs-45nm-26")
    assert "coherence" not in data and "# coherence: on (unset: " in out
    forced = load_machine("itrs-45nm-26", {"coherence": False})
    code, off, _ = cli("machine", "show", "itrs-45nm-26", "--set", "coherence=false")
    assert load_machine(yaml.safe_load(off)) == forced and "# coherence" not in off
    path = tmp_path / "m.yaml"
    path.write_text(out)
    code, again, _ = cli("machine", "show", path)
    assert code == 0 and again == out


def _closed_reader(*args: str) -> tuple[int, str]:
    """Run ``simsched ARGS`` with stdout a pipe whose reader has already gone (``| head``
    that has read enough): (exit status, stderr)."""
    import os
    import subprocess
    import sys

    from tests.cli.conftest import ROOT

    read, write = os.pipe()
    os.close(read)  # closed before the command writes: its first write meets EPIPE
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, *map(str, args)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-t", "TRACE", "-m", "itrs-45nm-2", "--json"],  # print(): click's exit(1)
        ["trace", "info", "TRACE"],  # a rich table: rich's exit(1)
    ],
    ids=["json", "table"],
)
def test_closed_stdout_exits_0_quietly(fib_trace, args):
    """``run --json | head -c 10`` used to exit 1 with no message."""
    code, err = _closed_reader(*[str(fib_trace) if a == "TRACE" else a for a in args])
    assert (code, err) == (0, "")


def test_output_to_a_closed_pipe_exits_0_quietly(fib_trace, tmp_path):
    """``-o /dev/stdout | head -c 10``: the output file is the pipe, and a reader that has
    read enough ends the command quietly, as for printed output (it was "cannot write
    (Broken pipe)", exit 2)."""
    code, err = _closed_reader("trace", "gen", "fib", "--param", "n=8", "-o", "/dev/stdout")
    assert (code, err.splitlines()[1:]) == (0, []), err  # stderr: the trace's summary only


def test_export_timeline_to_dev_stdout_writes_only_the_json(fib_trace, tmp_path):
    """``export timeline -o /dev/stdout``: stdout is the JSON document alone, its summary
    line on stderr (the line followed the JSON on stdout, which no JSON reader accepts)."""
    import json

    from tests.cli.conftest import run_process

    run = tmp_path / "run"
    proc = run_process("run", "-t", fib_trace, "-m", "itrs-45nm-2", "--out", run)
    assert proc.returncode == 0, proc.stderr
    proc = run_process("export", "timeline", run, "-o", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["traceEvents"]
    assert "strands" in proc.stderr


def test_dev_stdout_on_a_pipe(fib_trace, tmp_path):
    """``-o /dev/stdout`` on a pipe: /dev/stdout resolves to a name that does not exist
    ('pipe:[...]'); the output is written into the pipe."""
    import os
    import subprocess
    import sys

    from simsched.trace import open_trace
    from tests.cli.conftest import ROOT, run_process

    code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
    args = ["trace", "gen", "fib", "--param", "n=8", "-o", "/dev/stdout"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "t.sst").write_bytes(proc.stdout)
    with open_trace(tmp_path / "t.sst") as t:  # the whole trace came through the pipe
        assert t.header.n_strands > 0
    sweep = tmp_path / "sweep"
    for i in range(2):
        save_row(
            sweep,
            f"p{i}",
            {"point_id": f"p{i}", "workload": "w", "status": "ok", "v": i},
        )
    proc = run_process("results", "export", sweep, "-o", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["point_id,workload,status,v", "p0,w,ok,0", "p1,w,ok,1"]
    with open(tmp_path / "redirected", "w") as fh:  # /dev/stdout redirected to a file
        proc = run_process("results", "export", sweep, "-o", "/dev/stdout", stdout=fh)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "redirected").read_text().splitlines()[0] == "point_id,workload,status,v"


def test_print_json_is_strict_json(capsys):
    import json

    import numpy as np

    # a value a record lacks (NaN) must not reach stdout as a bare NaN, which jq refuses
    _common.print_json({"b": float("nan"), "a": np.float32(1.5), "c": [np.float64("inf")]})
    out = capsys.readouterr().out
    assert out == '{"a": 1.5, "b": null, "c": [null]}\n'
    json.loads(out, parse_constant=lambda name: pytest.fail(f"bare {name}"))


def test_results_show_keeps_counts_whole_beside_a_failed_point(cli, tmp_path):
    """A failed point's missing makespan makes the column float: 27834 cycles showed as
    2.783e+04, its last digit lost."""
    save_row(tmp_path, "p0", {"point_id": "p0", "status": "ok", "makespan_cycles": 27834})
    save_row(tmp_path, "p1", {"point_id": "p1", "status": "ok", "makespan_cycles": 2**60})
    save_row(tmp_path, "p2", {"point_id": "p2", "status": "error", "error": "X: y"})
    save_row(tmp_path, "p3", {"point_id": "p3", "status": "ok", "speedup": 1.23456})
    code, out, _ = cli("results", "show", tmp_path, "--columns", "makespan_cycles,speedup")
    assert code == 0
    assert "27834" in out and "e+04" not in out
    assert "1152921504606846976" in out  # an integer column: exact beyond a float's
    assert "1.235" in out  # a fraction keeps four digits
