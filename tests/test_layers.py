"""The layering of docs/architecture.md §3: import-linter contracts, kept and matching the doc."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> dict[str, dict]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in conf["contracts"]}


def test_contracts_are_kept(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_layers_contract_is_the_one_the_architecture_doc_draws():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## 3.", 1)[1].split("## 4.", 1)[0]
    block = re.search(r"```\n(simsched\.cli\n.*?)```", section, re.S)
    assert block, "docs/architecture.md §3 has no layer listing"
    assert block.group(1).splitlines() == _contracts()["layers"]["layers"]


def test_every_subpackage_is_in_a_layer():
    """A new package must be placed in the layering, or the contract would not check it."""
    layered = {m.strip() for line in _contracts()["layers"]["layers"] for m in line.split("|")}
    pkg = ROOT / "simsched"
    top = {
        f"simsched.{p.stem if p.is_file() else p.name}"
        for p in pkg.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and not p.name.startswith("_"))
    }
    assert top - layered == set()


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("simsched")


@pytest.mark.parametrize("above", ["api", "engine", "jobset", "experiments", "memory", "cli"])
def test_schedulers_import_nothing_above_them(graph, above):
    """Also imports inside functions: CAB's measurements come from the engine (ctx.facts)."""
    bad = graph.find_illegal_dependencies_for_layers(
        layers=(f"simsched.{above}", "simsched.schedulers"), containers=set()
    )
    assert not bad, [(d.importer, d.imported) for d in bad]
