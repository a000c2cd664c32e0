"""Scheduler registry: names, aliases, plug-ins, parameter validation."""

from __future__ import annotations

import pytest

from simsched.errors import ConfigError
from simsched.schedulers import REGISTRY, Scheduler, get_scheduler, register, scheduler_names
from simsched.schedulers import registry as reg
from simsched.schedulers.pdf import ParallelDepthFirst
from simsched.schedulers.ws import WorkStealing


def test_names_and_aliases():
    assert get_scheduler("ws") is WorkStealing
    assert get_scheduler("WS") is WorkStealing
    assert get_scheduler("work-stealing") is WorkStealing
    assert get_scheduler("pdf") is ParallelDepthFirst
    assert {"ws", "pdf"} <= set(scheduler_names())
    assert REGISTRY["cilk"] is WorkStealing


def test_unknown_name_lists_known():
    with pytest.raises(ConfigError, match=r"^unknown scheduler 'bogus' \(known: .*pdf.*ws"):
        get_scheduler("bogus")
    with pytest.raises(ConfigError, match=r"^unknown scheduler 5 "):
        get_scheduler(5)  # type: ignore[arg-type]


def test_register_conflict_and_replace():
    class Other(Scheduler):
        name = "ws"

    with pytest.raises(ConfigError, match="already taken"):
        register(Other)
    with pytest.raises(ConfigError):
        register(int)  # type: ignore[arg-type]


def test_a_subclass_under_a_new_name_registers_without_its_parents_aliases(monkeypatch):
    # It inherited WS's aliases, so registering it failed with "scheduler name
    # 'work-stealing' is already taken by WorkStealing" (an entry-point plug-in named as
    # its class failed to load the same way).
    from simsched.engine.controllers import CONTROLLERS, Equi

    monkeypatch.setattr(reg.SCHEDULERS, "entries", dict(reg.REGISTRY))
    monkeypatch.setattr(CONTROLLERS, "entries", dict(CONTROLLERS.entries))

    class MyWS(WorkStealing):
        name = "test-myws"

    class MyAliased(WorkStealing):
        name = "test-myws2"
        aliases = ("test-mine",)

    class MyEqui(Equi):
        name = "test-myequi"

    assert MyWS.aliases == () and MyAliased.aliases == ("test-mine",)
    assert register(MyWS) is MyWS and get_scheduler("test-myws") is MyWS
    assert register(MyAliased) is MyAliased and get_scheduler("test-mine") is MyAliased
    assert get_scheduler("cilk") is WorkStealing
    assert CONTROLLERS.register(MyEqui) is MyEqui and MyEqui.aliases == ()


def test_params_validation():
    assert WorkStealing.resolve_params(None) == {"spawn_policy": "child-first"}
    assert WorkStealing.resolve_params({"spawn_policy": "parent-first"})["spawn_policy"] == (
        "parent-first"
    )
    with pytest.raises(ConfigError, match="unknown parameter.*known: spawn_policy"):
        WorkStealing.resolve_params({"spawn": 1})
    with pytest.raises(ConfigError, match="child-first or parent-first"):
        WorkStealing.resolve_params({"spawn_policy": "x"})
    with pytest.raises(ConfigError, match="known: none"):
        ParallelDepthFirst.resolve_params({"a": 1})


def test_entry_point_plugin(monkeypatch):
    class EP:
        name = "plug"

        def load(self):
            class Plug(Scheduler):
                name = "plug"

            return Plug

    class Broken:
        name = "broken"

        def load(self):
            raise ImportError("no module named nowhere")

    groups = []

    def entry_points(group):
        groups.append(group)
        return [EP(), Broken()]

    monkeypatch.setattr(reg.SCHEDULERS, "_plugins_loaded", False)
    monkeypatch.setattr(reg.SCHEDULERS, "_plugin_errors", {})
    monkeypatch.setattr(reg.SCHEDULERS, "entries", dict(reg.REGISTRY))
    monkeypatch.setattr("simsched.registry.metadata.entry_points", entry_points)
    assert get_scheduler("plug").name == "plug"
    assert groups == ["simsched.schedulers"]
    assert "plug" in scheduler_names()
    with pytest.raises(ConfigError, match="plug-in failed to load.*nowhere"):
        get_scheduler("broken")


def test_an_unknown_long_name_is_quoted_shortened():
    with pytest.raises(ConfigError) as info:
        get_scheduler("z" * 5000)
    msg = str(info.value)
    assert msg.startswith("unknown scheduler 'zzzz") and "...zz" in msg and len(msg) < 300, msg
