"""Outside plug-ins' source: a record names it, and an edit makes the record stale and a
plug-in generator's cached trace be made anew."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

import simsched
from simsched.canonical import content_hash
from simsched.experiments.point import is_stale
from simsched.identity import outside_source_identity, source_identity
from simsched.plugins import PLUGIN_FIELD, plugins_changed
from simsched.registry import registered_source
from simsched.schedulers.registry import SCHEDULERS
from simsched.trace import recipes

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "fib-16-6.valgrind.sst"

SCHEDULER_SOURCE = """
from simsched.schedulers.ws import WorkStealing


class Mine(WorkStealing):
    \"\"\"Work stealing under another name, from outside simsched.\"\"\"

    name = "mine-test"
    aliases = ()
"""


def _package(root: Path, name: str, source: str) -> Path:
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(source)
    return pkg / "__init__.py"


def _forget(module: str) -> None:
    """What a new process would know: the identities are read once per process."""
    outside_source_identity.cache_clear()
    recipes._plugin_generator_identity.cache_clear()
    sys.modules.pop(module, None)


@pytest.fixture
def mine(tmp_path, monkeypatch):
    """A scheduler plug-in in a package of its own, registered for the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(SCHEDULERS, "entries", dict(SCHEDULERS.entries))
    init = _package(tmp_path, "ss_plugin_sched_test", SCHEDULER_SOURCE)
    _forget("ss_plugin_sched_test")
    import ss_plugin_sched_test

    SCHEDULERS.register(ss_plugin_sched_test.Mine)
    yield init
    _forget("ss_plugin_sched_test")


def test_a_plugin_scheduler_s_record_names_its_source_and_an_edit_makes_it_stale(mine):
    rec = simsched.run(SAMPLE, "itrs-scaling-2", "mine-test").record
    named = json.loads(rec[PLUGIN_FIELD])
    assert list(named) == ["scheduler:mine-test"] and len(named["scheduler:mine-test"]) == 16
    assert PLUGIN_FIELD not in simsched.run(SAMPLE, "itrs-scaling-2", "ws").record
    assert not is_stale(rec)
    mine.write_text(mine.read_text() + "\n# steals differently now\n")
    _forget("ss_plugin_sched_test")
    assert is_stale(rec)  # simsched's own code did not change
    assert (
        rec["code_identity"] == simsched.run(SAMPLE, "itrs-scaling-2", "ws").record["code_identity"]
    )


def test_a_record_whose_plugin_is_gone_is_stale_and_one_without_plugins_is_not():
    assert plugins_changed(json.dumps({"scheduler:no-such-plugin": "0123456789abcdef"}))
    assert not plugins_changed(None) and not plugins_changed("") and not plugins_changed("[1]")


def test_an_edited_plugin_generator_gets_a_new_cache_key(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    init = _package(tmp_path, "ss_plugin_gen_test", "GAPS = (3, 2)\n")
    ep = metadata.EntryPoint("vadd-test", "ss_plugin_gen_test", "simsched.workloads")
    monkeypatch.setattr(metadata, "entry_points", lambda group: [ep] if group == ep.group else [])
    recipe = {"kind": "generator", "generator": "vadd-test", "params": {"n": 8}}
    _forget("ss_plugin_gen_test")
    try:
        key = recipes.recipe_key(recipe)
        assert recipes.recipe_key(recipe) == key
        init.write_text("GAPS = (30, 20)\n")
        _forget("ss_plugin_gen_test")
        assert recipes.recipe_key(recipe) != key
    finally:
        _forget("ss_plugin_gen_test")
    # a built-in generator's key is what it was before plug-ins were keyed
    heat = {"kind": "generator", "generator": "heat", "params": {"nx": 34}}
    code = source_identity(recipes.TRACE_MAKING_PACKAGES)
    assert recipes.recipe_key(heat) == content_hash({"recipe": heat, "code": code, "fmt": 1})


def test_a_generator_registered_in_the_process_gets_a_new_cache_key_when_edited(
    tmp_path, monkeypatch
):
    # one registered by GENERATORS.register (from a --point-fn module, say) kept its cache
    # key when edited, and its old traces were used again
    from simsched.workloads import GENERATORS, Workload, fib

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(GENERATORS, "entries", dict(GENERATORS.entries))
    source = (
        "".join(
            f"from simsched.workloads.fib import {name}\n"
            for name in ("PARAMS", "finish_params", "layout", "emit", "memory")
        )
        + 'NAME = "inproc-test"\nSUMMARY = "fib under another name"\n'
    )
    init = _package(tmp_path, "ss_plugin_inproc_test", source)
    _forget("ss_plugin_inproc_test")
    recipe = {"kind": "generator", "generator": "inproc-test", "params": {"n": 8}}
    try:
        import ss_plugin_inproc_test

        unregistered = recipes.recipe_key(recipe)
        GENERATORS.register(Workload(ss_plugin_inproc_test))
        key = recipes.recipe_key(recipe)
        assert key != unregistered and recipes.recipe_key(recipe) == key
        init.write_text(source + "# emits differently now\n")
        _forget("ss_plugin_inproc_test")
        assert recipes.recipe_key(recipe) != key
        # built-in generators registered in the process (all of them) keep their keys
        assert registered_source("workload", "fib") is None and fib.NAME == "fib"
    finally:
        _forget("ss_plugin_inproc_test")


def test_simsched_s_own_modules_have_no_outside_identity():
    assert outside_source_identity("simsched.schedulers.ws") is None
    assert outside_source_identity("no_such_module_anywhere") is None
