"""The plug-in registry shared by schedulers, controllers and workloads."""

from __future__ import annotations

import types

import pytest

from simsched.engine.controllers import CONTROLLERS, Controller, Equi, get_controller
from simsched.errors import ConfigError
from simsched.registry import Registry, class_registry
from simsched.schedulers import Scheduler
from simsched.schedulers.registry import SCHEDULERS
from simsched.workloads import GENERATORS, get
from simsched.workloads import fib as fib_module


class _EP:
    """An entry point as ``importlib.metadata`` gives it: a name and ``load()``."""

    def __init__(self, name, obj=None, error=None):
        self.name, self._obj, self._error = name, obj, error

    def load(self):
        if self._error is not None:
            raise self._error
        return self._obj


@pytest.fixture
def plugins(monkeypatch):
    """Entry points per group, read by every registry while the test runs; the three
    built-in registries are restored afterwards."""
    groups: dict[str, list[_EP]] = {}
    reads: list[str] = []

    def entry_points(group):
        reads.append(group)
        return groups.get(group, [])

    monkeypatch.setattr("simsched.registry.metadata.entry_points", entry_points)
    for r in (SCHEDULERS, CONTROLLERS, GENERATORS):
        monkeypatch.setattr(r, "entries", dict(r.entries))
        monkeypatch.setattr(r, "_plugins_loaded", False)
        monkeypatch.setattr(r, "_plugin_errors", {})
    return groups, reads


def test_every_kind_looks_names_up_alike():
    for registry, name in ((SCHEDULERS, "ws"), (CONTROLLERS, "equi"), (GENERATORS, "heat")):
        entry = registry.get(name)
        assert registry.get(f"  {name.upper()} ") is entry
        for bad in ("nosuch", "", None, 5, ["x"]):
            with pytest.raises(ConfigError, match=rf"^unknown {registry.kind} "):
                registry.get(bad)
        with pytest.raises(ConfigError, match=rf"\(known: .*{name}"):
            registry.get("nosuch")
    assert get_controller("EQUI") is Equi
    assert get("HEAT").name == "heat"


def test_register_checks_names_and_kind():
    r = class_registry("gadget", "test.gadgets", Scheduler)

    class A(Scheduler):
        name = "a"
        aliases = ("alpha",)

    class B(Scheduler):
        name = "alpha"

    class Nameless(Scheduler):
        name = ""

    assert r.register(A) is A
    assert r.get("Alpha") is A and r.names() == ["a"]
    with pytest.raises(ConfigError, match="^gadget name 'alpha' is already taken by A$"):
        r.register(B)
    assert r.get("a") is A  # a refused registration changes nothing
    assert r.register(B, replace=True) is B and r.get("alpha") is B
    for bad in (Nameless, int, "a"):
        with pytest.raises(ConfigError, match="is not a Scheduler subclass with a name"):
            r.register(bad)
    plain = Registry("thing", "test.things", lambda t: (t,), lambda obj, name: obj)
    with pytest.raises(ConfigError, match="needs a non-empty name"):
        plain.register(" ")


def test_plugins_of_each_kind(plugins):
    groups, reads = plugins

    class Plug(Scheduler):
        name = "plug"

    class Other(Controller):
        name = "something-else"

    gen = types.ModuleType("mygen")
    # no references(params): it is optional (no progress total, no size limit)
    for attr in ("SUMMARY", "PARAMS", "finish_params", "layout", "emit", "memory"):
        setattr(gen, attr, getattr(fib_module, attr))
    gen.NAME = "mygen"
    half = types.ModuleType("half")
    half.NAME = "half"
    groups["simsched.schedulers"] = [_EP("plug", Plug), _EP("gone", error=ImportError("nowhere"))]
    groups["simsched.controllers"] = [_EP("mine", Other)]
    groups["simsched.workloads"] = [_EP("mygen", gen), _EP("half", half), _EP("x", Plug)]

    assert reads == []  # nothing is read before a lookup
    assert SCHEDULERS.get("ws").name == "ws" and reads == []  # nor for a built-in name
    assert SCHEDULERS.get("plug") is Plug
    with pytest.raises(ConfigError, match=r"^scheduler 'gone': plug-in failed .*nowhere"):
        SCHEDULERS.get("gone")
    # a plug-in class is registered under its entry point's name
    assert CONTROLLERS.get("mine").name == "mine" and "mine" in CONTROLLERS.names()
    assert issubclass(CONTROLLERS.get("mine"), Other)
    assert CONTROLLERS.get("mine").__module__ == Other.__module__  # was simsched.registry
    assert GENERATORS.get("mygen").module is gen and "mygen" in GENERATORS.names()
    with pytest.raises(ConfigError, match="lacks SUMMARY, PARAMS, finish_params"):
        GENERATORS.get("half")
    with pytest.raises(ConfigError, match="is not a generator module"):
        GENERATORS.get("x")
    assert sorted(set(reads)) == [
        "simsched.controllers",
        "simsched.schedulers",
        "simsched.workloads",
    ]
    assert reads.count("simsched.schedulers") == 1  # read once


def test_a_plugin_never_replaces_a_built_in(plugins):
    groups, _ = plugins

    class Impostor(Scheduler):
        name = "ws"

    groups["simsched.schedulers"] = [_EP("WS", Impostor)]
    assert SCHEDULERS.get("ws") is not Impostor
    assert SCHEDULERS.plugin_errors() == {
        "ws": "ConfigError: the name 'WS' is taken by a built-in scheduler"
    }


def test_listings_say_which_plugins_failed(plugins, capsys):
    from simsched.cli import main

    groups, _ = plugins
    groups["simsched.controllers"] = [_EP("broken", error=ImportError("no module named nowhere"))]
    groups["simsched.workloads"] = [_EP("halfgen", types.ModuleType("halfgen"))]
    for args, warning in (
        (
            ["schedulers"],
            "controller plug-in 'broken' (simsched.controllers) failed to load: "
            "ImportError: no module named nowhere",
        ),
        (["trace", "gen", "--list"], "workload plug-in 'halfgen' (simsched.workloads) failed"),
    ):
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code in (0, None)
        err = capsys.readouterr().err
        assert f"simsched: warning: {warning}" in err, err
