"""Notebooks are committed without outputs and read their study's specs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simsched.experiments import load_spec
from simsched.experiments.spec import Point

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_are_stripped(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, path


@pytest.mark.parametrize("name", ["small.yaml", "medium.yaml", "full.yaml"])
def test_study_specs_expand(name):
    loaded = load_spec(ROOT / "experiments" / "pdf_vs_ws" / name, small=False)
    points = loaded.points()
    cols = [p.columns() for p in points]
    assert {c["workload"] for c in cols} == {"mergesort", "hashjoin", "fib"}
    assert {c["scheduler"] for c in cols} == {"ws", "pdf"}
    assert {c["seed"] for c in cols if c["scheduler"] == "pdf"} == {0}
    assert len({c["seed"] for c in cols if c["scheduler"] == "ws"}) >= 2
    if name == "full.yaml":
        machines = {c["machine"] for c in cols}
        assert {f"itrs-scaling-{n}" for n in (1, 2, 4, 8, 16, 32)} <= machines
        assert {f"itrs-45nm-{n}" for n in (1, 2, *range(4, 27, 2))} <= machines


def test_laws_scaling_spec_pairs_programs_with_servers():
    """Figs. 9-12: Heat-ir and 6P on the AMD server, SOR-ir and 9P on the Intel one."""
    loaded = load_spec(ROOT / "experiments" / "laws" / "scaling.yaml", small=False)
    pairs = {
        (c["workload"].split("[")[0], c["machine"]) for c in map(Point.columns, loaded.points())
    }
    assert pairs == {
        ("heat-ir", "opteron-1/64"),
        ("6p", "opteron-1/64"),
        ("sor-ir", "xeon-1/64"),
        ("9p", "xeon-1/64"),
    }
    assert len(loaded.points()) == 4 * 5 * 3 * 3


def _readme_rows() -> dict[str, str]:
    """notebook file name -> its row of notebooks/README.md's table."""
    text = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    return {
        m.group(1): line
        for line in text.splitlines()
        if (m := re.match(r"\| `(\w+\.ipynb)` \|", line))
    }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_readme_names_the_specs_a_notebook_runs(path):
    """Every spec a notebook loads by name is in its README row, and every spec the row
    names exists in the study's folder."""
    row = _readme_rows()[path.name]
    code = "\n".join(
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    )
    named = set(re.findall(r"[\"'](\w[\w-]*\.yaml)[\"']", code))
    expanded = re.sub(
        r"\{([\w,-]+)\}\.yaml",
        lambda m: " ".join(f"{n}.yaml" for n in m.group(1).split(",")),
        row,
    )
    listed = set(re.findall(r"[\w-]+\.yaml", expanded))
    assert named <= listed, f"{path.name} loads {sorted(named - listed)}, not in its README row"
    study = re.search(r"`experiments/(\w+)/", row).group(1)
    for name in listed:
        assert (ROOT / "experiments" / study / name).is_file(), name
