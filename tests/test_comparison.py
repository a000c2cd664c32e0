"""simsched.comparison: the notes that explain a comparison (and the record's warnings)."""

from __future__ import annotations

import json

import pytest

import simsched
from simsched.comparison import Note, compare_notes, run_notes
from simsched.machine import load_machine
from simsched.schedulers import REGISTRY, get_scheduler
from simsched.trace import open_trace
from simsched.workloads import generate
from tests.engine.machines import ONE_BY_THREE, TWO_BY_TWO


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    heat = dict(nx=64, ny=64, iters=2, cutoff=8)
    generate("heat", d / "heat-init.sst", **heat)
    generate("heat", d / "heat-noinit.sst", init=False, **heat)
    generate("mergesort", d / "ms.sst", n=4096, grain=256)
    return d


def _codes(notes):
    return [n.code for n in notes]


def test_policies_declare_numa_awareness_and_iterations():
    aware = sorted({c.name for c in REGISTRY.values() if c.numa_aware})
    assert aware == ["cats", "laws", "laws-nc"]
    assert get_scheduler("laws").without_iterations
    assert get_scheduler("ws").without_iterations is None


def test_heat_init_on_one_node_warns_laws_not_ws(traces):
    """Issue 24 item 15: heat's init=true first-touches every page on node 0."""
    warned = simsched.run(traces / "heat-init.sst", TWO_BY_TWO, "laws", speedup=False)
    ws = simsched.run(traces / "heat-init.sst", TWO_BY_TWO, "ws", speedup=False)
    spread = simsched.run(traces / "heat-noinit.sst", TWO_BY_TWO, "laws", speedup=False)
    codes = [w["code"] for w in json.loads(warned.record["warnings"])]
    assert codes == ["data-one-node"]
    assert "node 0" in json.loads(warned.record["warnings"])[0]["message"]
    assert json.loads(ws.record["warnings"]) == []
    assert json.loads(spread.record["warnings"]) == []


def test_one_socket_and_no_iterations_and_cab_bl(traces):
    m = load_machine(ONE_BY_THREE)
    with open_trace(traces / "ms.sst") as t:
        recs = [simsched.run(t, m, s, speedup=False).record for s in ("ws", "laws", "cats", "cab")]
        notes = compare_notes(recs, t, m)
        per_run = run_notes(recs[1], t, m)
    assert _codes(per_run) == ["one-socket", "no-iterations"]
    by = {n.code: n for n in notes}
    # one line per cause, naming every scheduler it concerns
    assert _codes(notes).count("one-socket") == 1
    assert by["one-socket"].schedulers == ("laws", "cats")
    assert by["one-socket"].text.startswith("laws, cats: NUMA-aware")
    assert "first iteration" in by["no-iterations"].text
    assert by["cab-bl"].level == "warning" and "cab is WS" in by["cab-bl"].text
    assert "single squad" in by["cab-bl"].text
    # the record keeps the warnings (not the info notes)
    assert [w["code"] for w in json.loads(recs[3]["warnings"])] == ["cab-bl"]


def test_compulsory_misses_note_only_when_footprint_fits(traces):
    big = {**ONE_BY_THREE, "name": "big-l2"}
    big["caches"] = [dict(c) for c in ONE_BY_THREE["caches"]]
    big["caches"][1]["size"] = 1 << 20
    res = simsched.compare(traces / "ms.sst", big, "ws,pdf", speedup=False)
    comp = [n for n in res.notes if n.code == "compulsory-misses"]
    assert len(comp) == 1 and "fits one L2" in comp[0].text
    small = simsched.compare(traces / "ms.sst", ONE_BY_THREE, "ws,pdf", speedup=False)
    assert "compulsory-misses" not in _codes(small.notes)


def test_note_as_dict():
    assert Note("x", "y").as_dict() == {"code": "x", "message": "y"}


def test_cli_compare_prints_notes_and_run_prints_warnings(traces, tmp_path, capsys):
    from simsched.cli import main
    from simsched.machine import Machine

    path = tmp_path / "m.yaml"
    import yaml

    path.write_text(yaml.safe_dump(Machine.model_validate(ONE_BY_THREE).model_dump(mode="json")))
    with pytest.raises(SystemExit):
        main(["compare", "-t", str(traces / "ms.sst"), "-m", str(path), "-s", "ws,laws"])
    out = capsys.readouterr().out
    assert "notes:" in out and "laws: NUMA-aware" in out
    with pytest.raises(SystemExit):
        main(["run", "-t", str(traces / "heat-init.sst"), "-m", str(path), "-s", "laws"])
    err = capsys.readouterr().err
    assert "warning: laws: NUMA-aware" in err
