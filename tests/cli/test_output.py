"""Output readable at 80 columns and when piped; labels never eaten as markup; YAML valid."""

from __future__ import annotations

import io
import re

import pytest
import yaml
from rich.console import Console

from simsched.cli import _common
from simsched.experiments.store import atomic_write_json
from simsched.machine import load_machine

CUT = "…"


@pytest.fixture
def terminal80(monkeypatch):
    """A colour-less 80-column terminal in place of stdout's console."""
    buf = io.StringIO()
    term = Console(file=buf, width=80, force_terminal=True, color_system=None, markup=False)
    monkeypatch.setattr(_common, "console", term)
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
        atomic_write_json(tmp_path / "points" / f"p{i}" / "row.json", row)
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
    assert load_machine(data) == load_machine("itrs-45nm-26").model_copy(
        update={"coherence": load_machine("itrs-45nm-26").coherent}
    )
    path = tmp_path / "m.yaml"
    path.write_text(out)
    code, again, _ = cli("machine", "show", path)
    assert code == 0 and again == out
