"""``simsched schedulers``: every policy's declared parameters, on the terminal and in the docs."""

from __future__ import annotations

import json

from simsched.cli.policies import params_reference
from simsched.engine.controllers import REGISTRY as CONTROLLERS
from simsched.schedulers import get_scheduler, scheduler_names
from tests.cli.conftest import ROOT


def test_docs_list_the_declared_parameters():
    """docs/schedulers.md §8 is what the declarations generate (regenerate with
    `simsched schedulers --markdown` when a parameter changes)."""
    doc = (ROOT / "docs" / "schedulers.md").read_text()
    section = doc.split("## 8. Parameters of every scheduler and controller", 1)[1]
    assert params_reference() in section


def test_params_lists_every_parameter_with_type_default_and_meaning(cli):
    code, out, err = cli("schedulers", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [s["name"] for s in data["schedulers"]] == scheduler_names()
    assert {c["name"] for c in data["controllers"]} == {c.name for c in CONTROLLERS.values()}
    cab = next(s for s in data["schedulers"] if s["name"] == "cab")
    assert [p["name"] for p in cab["params"]] == list(get_scheduler("cab").param_defaults)
    assert all(p["doc"] and p["type"] for s in data["schedulers"] for p in s["params"])
    code, out, _ = cli("schedulers", "--params")
    assert code == 0
    for word in ("cpu_threshold", "spawn_policy", "shares", "quantum_ms", "parent-first"):
        assert word in out


def test_markdown_and_json_together_are_refused(cli):
    """``--markdown --json`` printed the Markdown and dropped --json."""
    code, out, err = cli("schedulers", "--markdown", "--json")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["simsched: error: --markdown and --json: give one of them"]


def test_what_every_controller_takes_is_listed_with_the_placements_it_accepts(cli):
    from simsched.cli.policies import CONTROLLER_COMMON_DOC
    from simsched.engine.controllers import PLACEMENTS

    assert "`quantum_ms`" in CONTROLLER_COMMON_DOC and "`placement`" in CONTROLLER_COMMON_DOC
    for value in PLACEMENTS:
        assert f"`{value}`" in CONTROLLER_COMMON_DOC
    out = cli("schedulers", "--params")[1]
    assert "placement (sockets or any, default sockets)" in " ".join(out.split())
