"""One coercion routine for every kind of parameter (generators, schedulers)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from simsched.errors import ConfigError
from simsched.params import MAX_SEED, check_int, check_seed, coerce, is_power_of_two
from simsched.schedulers import get_scheduler
from simsched.workloads import WORKLOADS


@pytest.mark.parametrize(
    "value,kind,want",
    [
        ("2^20", int, 1 << 20),
        ("1<<4", int, 16),
        (8.0, int, 8),
        ("yes", bool, True),
        (0, bool, False),
        ("2.5", float, 2.5),
        ("auto", str, "auto"),
    ],
)
def test_accepted_spellings(value, kind, want):
    assert coerce(value, kind, "p") == want


@pytest.mark.parametrize(
    "value,kind", [(True, int), (2.5, int), ("x", int), ("maybe", bool), ("inf", float)]
)
def test_refused_values_name_the_parameter(value, kind):
    with pytest.raises(ConfigError, match="^p: expected"):
        coerce(value, kind, "p")


@pytest.mark.parametrize("value", ["2^99", "2**65", "1<<99999"])
def test_an_integer_with_a_huge_exponent_is_said_to_be_one(value):
    """It was "expected an integer (e.g. ... 2^20, 1<<20)", for a value of that form."""
    with pytest.raises(ConfigError, match=r"^p: '.*': an exponent above 64, far beyond any"):
        coerce(value, int, "p")
    assert coerce("2^64", int, "p") == 1 << 64 and coerce("3**2", int, "p") == 9


def test_numpy_scalars_are_taken_as_the_python_values_they_hold():
    """A parameter read from a numpy array or a DataFrame: ``np.True_`` was refused as a
    bool ("got np.True_") and taken as 1.0 by a float parameter, where True is refused."""
    import numpy as np

    assert coerce(np.True_, bool, "p") is True
    assert coerce(np.bool_(False), bool, "p") is False
    assert coerce(np.float32(8.0), int, "p") == 8
    assert (
        coerce(np.str_("auto"), str, "p") == "auto" and type(coerce(np.str_("a"), str, "p")) is str
    )
    for kind in (int, float):
        with pytest.raises(ConfigError, match="^p: expected .*got True$"):
            coerce(np.True_, kind, "p")
    assert get_scheduler("cats").resolve_params({"pack": np.False_})["pack"] is False
    with pytest.raises(ConfigError, match="cpu_threshold: expected a number, got True"):
        get_scheduler("cats").resolve_params({"cpu_threshold": np.True_})


def test_schedulers_and_workloads_refuse_the_same_spellings():
    """An integer parameter given as 2.5 is refused by a generator and by a scheduler."""
    with pytest.raises(ConfigError, match="mergesort: parameter n: expected an integer"):
        WORKLOADS["mergesort"].resolve({"n": 2.5})
    cls = get_scheduler("cab")
    ints = [k for k, v in cls.param_defaults.items() if type(v) is int]
    assert ints, "cab declares an integer parameter"
    with pytest.raises(ConfigError, match=f"scheduler 'cab': {ints[0]}: expected an integer"):
        cls.resolve_params({ints[0]: 2.5})
    assert cls.resolve_params({ints[0]: "2^3"})[ints[0]] == 8


# -- declared parameters -------------------------------------------------------------------
def test_schema_resolves_checks_and_names_the_owner():
    from simsched.params import Param, ParamSchema

    schema = ParamSchema(
        n=Param(4, "count", ge=1),
        mode=Param("a", "mode", choices=("a", "b"), synonyms={"b": ("bee",)}),
        x=Param(0.5, "fraction", gt=0, le=1),
    )
    assert schema.resolve("thing 't'", {"n": "2^3", "mode": "BEE"}) == {
        "n": 8,
        "mode": "b",
        "x": 0.5,
    }
    for bad, msg in [
        ({"n": 0}, "thing 't': n=0 must be >= 1"),
        ({"mode": "c"}, "thing 't': mode='c' is not a or b"),
        # `-p mode=none` reads as YAML's null: it quoted None, which nobody typed
        (
            {"mode": None},
            r"thing 't': mode has no value \(null, none or nothing given\), not a or b",
        ),
        ({"x": 1.5}, "thing 't': x=1.5 must be <= 1"),
        ({"x": 0}, "thing 't': x=0.0 must be > 0"),
        ({"y": 1}, r"thing 't': unknown parameter\(s\) y \(known: mode, n, x\)"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            schema.resolve("thing 't'", bad)


def test_every_policy_declares_documented_parameters_once():
    """Each parameter of each scheduler and controller has a type and a line of docs, and
    the schema refuses values its policy used to refuse by hand."""
    from simsched.engine.controllers import REGISTRY

    for cls in [get_scheduler(n) for n in ("ws", "cab", "laws", "cats", "saws", "asteal")]:
        assert cls.param_defaults == cls.params_schema.defaults()
        assert all(doc for _, _, _, doc in cls.params_schema.rows()), cls.name
    for cls in set(REGISTRY.values()):
        assert all(doc for _, _, _, doc in cls.params_schema.rows()), cls.name
    for name, params, msg in [
        ("saws", {"beta": 0.5}, "beta=0.5 must be >= 1"),
        ("asteal", {"rho": 1}, "rho=1.0 must be > 1"),
        ("asteal", {"delta": 1.5}, "delta=1.5 must be <= 1"),
        ("saws", {"measure": "guess"}, "measure='guess' is not exact or sampled"),
        ("laws", {"cpu_threshold": -1}, "cpu_threshold=-1.0 must be > 0"),
        ("cab", {"cpu_bound": "maybe"}, "cpu_bound='maybe' is not auto, yes or no"),
    ]:
        with pytest.raises(ConfigError, match=f"scheduler '{name}': {msg}"):
            get_scheduler(name).resolve_params(params)
    assert get_scheduler("cab").resolve_params({"cpu_bound": True})["cpu_bound"] == "yes"


def test_a_plugin_with_a_plain_defaults_table_still_works():
    from simsched.schedulers.base import Scheduler

    class Old(Scheduler):
        name = "old"
        param_defaults = {"k": 3}

    assert Old.resolve_params({"k": "5"}) == {"k": 5}
    with pytest.raises(ConfigError, match="unknown parameter"):
        Old.resolve_params({"j": 1})


def test_a_plain_defaults_table_keeps_what_the_parent_declares():
    """A WS subclass's ``spawn_policy`` took any string; a misspelt one ran parent-first."""
    from simsched.schedulers.ws import WorkStealing

    class OldWS(WorkStealing):
        name = "old-ws"
        param_defaults = {"spawn_policy": "parent-first", "k": 3}

    assert OldWS.resolve_params({}) == {"spawn_policy": "parent-first", "k": 3}
    assert OldWS.params_schema["spawn_policy"].choices == ("child-first", "parent-first")
    with pytest.raises(ConfigError, match="spawn_policy='bogus' is not child-first or parent"):
        OldWS.resolve_params({"spawn_policy": "bogus"})
    with pytest.raises(ConfigError, match="class Bad: spawn_policy='x' is not child-first"):
        type("Bad", (WorkStealing,), {"name": "bad", "param_defaults": {"spawn_policy": "x"}})


def test_a_broken_declaration_is_refused_naming_the_class():
    # These failed inside simsched, naming no class: "'dict' object has no attribute
    # 'defaults'", "'int' object has no attribute 'default'", "'>=' not supported".
    from simsched.engine.controllers import Controller
    from simsched.params import Param, ParamSchema
    from simsched.schedulers.base import Scheduler

    with pytest.raises(ConfigError, match="scheduler class Mine: params_schema must be a "):
        type("Mine", (Scheduler,), {"name": "mine", "params_schema": {"k": 3}})
    with pytest.raises(ConfigError, match=r"class Mine: param_defaults=\[\('k', 3\)\]: expected"):
        type("Mine", (Scheduler,), {"name": "mine", "param_defaults": [("k", 3)]})
    with pytest.raises(ConfigError, match="controller class Mine: params_schema must be a "):
        type("Mine", (Controller,), {"name": "mine", "params_schema": None})
    with pytest.raises(ConfigError, match=r"ParamSchema: k=3 is not a Param \(declare k=Param"):
        ParamSchema(k=3)
    with pytest.raises(ConfigError, match=r"Param\(5, ...\): ge='0' is not a number"):
        Param(5, "doc", ge="0")


def test_controller_parameters_come_from_their_schema():
    from simsched.engine.controllers import get_controller
    from simsched.machine import load_machine

    m = load_machine("opteron-8380-4x4")
    static = get_controller("static")
    assert static(m, 2, {"shares": "4, 12"}).params["shares"] == [4, 12]
    assert static(m, 2, {"shares": [8, 8]}).blocks[1] == tuple(range(8, 16))
    with pytest.raises(ConfigError, match="controller 'static': shares='a,b' is not a list"):
        static(m, 2, {"shares": "a,b"})
    # one share for two jobs was "must give each of the 2 jobs a non-negative number of
    # cores, 16 in all at most", and bytes were read as their byte values (b"4" as 52)
    with pytest.raises(ConfigError, match=r"shares \[4\] give 1 job\(s\) cores; the job set has 2"):
        static(m, 2, {"shares": "4"})
    with pytest.raises(ConfigError, match=r"^controller 'static': shares=b'4' is not a list"):
        static(m, 2, {"shares": b"4"})
    with pytest.raises(ConfigError, match=r"controller 'equi': unknown parameter\(s\) shares"):
        get_controller("equi")(m, 2, {"shares": [1, 1]})


def test_check_mapping_refuses_what_is_no_mapping_of_names():
    """Before: dict(params) raised TypeError or ValueError from inside (a list, a string),
    and an integer key a TypeError when the unknown names were listed."""
    from simsched.params import ParamSchema, check_mapping

    assert check_mapping(None, "params") == {}
    assert check_mapping({"a": 1}, "params") == {"a": 1}
    with pytest.raises(ConfigError, match=r"^params=\[1\]: expected a mapping \(dict\)"):
        check_mapping([1], "params")
    schema = get_scheduler("ws").params_schema
    assert isinstance(schema, ParamSchema)
    with pytest.raises(ConfigError, match="^scheduler 'ws': parameters: key 1 is not a string"):
        schema.resolve("scheduler 'ws'", {1: 2})
    with pytest.raises(ConfigError, match="^scheduler 'ws': parameters='abc': expected"):
        schema.resolve("scheduler 'ws'", "abc")


def test_check_recordable_refuses_a_value_a_record_cannot_keep():
    """A run's record keeps the parameters as given: simsched.run(params={"bl": {1}}) was a
    TypeError from the JSON encoder, with its traceback."""
    from simsched.params import check_recordable

    ok = {"a": 1, "b": [1.5, "x", None, True], "c": {"d": np.int64(2)}}
    assert check_recordable(ok, "params") is ok
    with pytest.raises(ConfigError, match=r"^params: bl=\{1\}: expected text, a number"):
        check_recordable({"bl": {1}}, "params")
    loop: list = []
    loop.append(loop)
    with pytest.raises(ConfigError, match=r"^params: x=\[.*\]: expected text"):
        check_recordable({"x": loop}, "params")


def test_text_that_is_not_utf8_is_told_and_a_file_name_written_out():
    """A byte that is not UTF-8 in an argument or a file name is a lone surrogate in Python,
    which the results' Parquet table cannot hold."""
    from simsched.params import check_label, is_utf8, name_text

    bad = os.fsdecode(b"a\xffb")
    assert is_utf8("é ok") and not is_utf8(bad)
    assert name_text(bad) == "a\\xffb" and name_text("é") == "é"
    with pytest.raises(ValueError, match="a name is UTF-8 text"):
        check_label(bad, "a machine")


def test_check_flag_takes_bools_only():
    """A yes/no argument took any value by its truth: ``refresh="no"`` refreshed."""
    import numpy as np

    from simsched.params import check_flag

    assert check_flag(True, "f") is True and check_flag(np.bool_(False), "f") is False
    for bad, shown in (("no", "'no'"), (0, "0"), (None, "None"), (np.int64(1), "1")):
        with pytest.raises(ConfigError, match=f"^refresh={shown}: expected True or False$"):
            check_flag(bad, "refresh")


def test_python_scalars_turns_numpy_scalars_into_python_values():
    import numpy as np

    from simsched.params import python_scalars

    out = python_scalars({"a": np.int64(2), "b": [np.float64(0.5), (np.bool_(True),)], "c": "x"})
    assert out == {"a": 2, "b": [0.5, (True,)], "c": "x"}
    assert type(out["a"]) is int and type(out["b"][1][0]) is bool


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("n", 1.5), r"^n=1\.5: expected an integer$"),
        (("n", True), r"^n=True: expected an integer$"),
        (("n", "3"), r"^n='3': expected an integer$"),
        (("n", -1), r"^n=-1: must be at least 0$"),
        (("n", 0, 1), r"^n=0: must be at least 1$"),
        (("n", 9, 1, 8), r"^n=9: must be between 1 and 8$"),
        (("n", 0, 1, 8), r"^n=0: must be between 1 and 8$"),
        (
            ("n", 2**41, 0, 2**40),
            r"^n=2199023255552: must be between 0 and 1099511627776 \(2\^40\)$",
        ),
    ],
)
def test_check_int_names_the_value_and_the_range(args, message):
    with pytest.raises(ConfigError, match=message):
        check_int(*args)


def test_check_int_takes_numpy_integers_and_the_bounds_themselves():
    np = pytest.importorskip("numpy")
    assert check_int("n", np.int64(8), 1, 8) == 8 and type(check_int("n", np.int32(1), 1)) is int
    assert check_seed(MAX_SEED) == MAX_SEED
    with pytest.raises(ConfigError, match=r"^seed=-1: must be between 0 and \d+ \(2\^63 - 1\)$"):
        check_seed(-1)
    with pytest.raises(ConfigError, match=r"^seed=2\.0: expected an integer$"):
        check_seed(np.float64(2.0))


def test_is_power_of_two():
    assert [n for n in range(-4, 70) if is_power_of_two(n)] == [1, 2, 4, 8, 16, 32, 64]
    assert is_power_of_two(2**63) and not is_power_of_two(2**63 - 1)


def test_a_callback_that_is_no_function_is_named_before_any_work(tmp_path):
    """Before: ``progress=3`` failed after the first chunk of work, deep inside it, as
    "'int' object is not callable"."""
    from simsched.params import check_callable
    from simsched.profile import profile_trace
    from simsched.trace import import_raw
    from simsched.workloads import generate

    assert check_callable(None, "progress") is None and check_callable(print, "p") is print
    path = tmp_path / "h.sst"
    calls = [
        lambda: generate("heat", path, progress=3, nx=10, ny=10, iters=1),
        lambda: profile_trace(path, progress="x"),
        lambda: import_raw(tmp_path / "nosuch.raw", tmp_path / "o.sst", progress=[1]),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(ConfigError, match=r"^progress=.*: expected a function or None"):
            call()
        if i == 0:  # refused before a file was made; now one for the next call
            assert not path.exists()
            generate("heat", path, nx=10, ny=10, iters=1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", True), ("1", True), (" Yes ", True), ("on", True), ("0", False), ("OFF", False)],
)
def test_env_flag_reads_the_usual_words(monkeypatch, value, expected):
    """SIMSCHED_STEAL_BATCH=off left batching on: only "0" turned it off."""
    from simsched.engine.spin import batching_enabled
    from simsched.params import env_flag

    monkeypatch.setenv("SIMSCHED_STEAL_BATCH", value)
    assert env_flag("SIMSCHED_STEAL_BATCH", True) is expected
    assert batching_enabled() is expected


def test_env_flag_refuses_other_words(monkeypatch):
    from simsched.engine.spin import batching_enabled

    monkeypatch.setenv("SIMSCHED_STEAL_BATCH", "ture")
    with pytest.raises(ConfigError, match=r"^SIMSCHED_STEAL_BATCH='ture': expected 1 or 0"):
        batching_enabled()
