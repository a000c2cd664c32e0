"""One job of a replay: what its scheduler answers the engine."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.engine import JobSpec, Replay
from simsched.engine.controllers import get_controller
from simsched.machine import load_machine
from simsched.schedulers.ws import WorkStealing
from simsched.trace import open_trace
from tests.engine.conftest import make_trace


@pytest.mark.parametrize("desire", ["lots", 2.5, -1, True, [2]])
def test_a_desire_that_is_no_count_names_the_scheduler(tmp_path, desire):
    # "lots" failed inside the controller with "invalid literal for int()", 2.5 was
    # truncated to 2, -1 was blamed on "desires" with no scheduler named.
    class Wanting(WorkStealing):
        name = "test-wanting"

        def on_quantum(self, now):
            return desire

    m = load_machine("itrs-scaling-4")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=4))
    specs = [JobSpec(t, Wanting, Wanting.resolve_params({}), 0, f"j{i}") for i in range(2)]
    ctl = get_controller("deq")(m, 2, {}, 200)
    with pytest.raises(
        RuntimeError,
        match=r"^scheduler 'test-wanting' of job 'j0' answered on_quantum at \d+ with .*: a "
        r"processor desire is an integer >= 0, or None$",
    ):
        Replay(m, specs, controller=ctl).run()


def test_numpy_desires_are_desires(tmp_path):
    class Wanting(WorkStealing):
        name = "test-wanting-np"

        def on_quantum(self, now):
            return np.int64(2)

    m = load_machine("itrs-scaling-4")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=4))
    specs = [JobSpec(t, Wanting, Wanting.resolve_params({}), 0, f"j{i}") for i in range(2)]
    res = Replay(m, specs, controller=get_controller("deq")(m, 2, {}, 200)).run()
    assert any(2 in desires for _, _, desires, *_ in res.series)


@pytest.mark.parametrize(
    ("counters", "fields", "message"),
    [
        ({"mine": "many"}, {}, r"counter 'mine' is 'many', not an integer"),
        ({"mine": 1.5}, {}, r"counter 'mine' is 1.5, not an integer"),
        ({}, {"x": object()}, r"record_fields\(\) gave a value no record holds"),
        ({}, {"x": {1, 2}}, r"record_fields\(\) gave a value no record holds"),
        ({}, [("x", 1)], r"record_fields\(\) gave \[\('x', 1\)\], not a dict by name"),
    ],
)
def test_outputs_the_record_cannot_hold_name_the_scheduler(tmp_path, counters, fields, message):
    # A counter "many" failed in int() while the record was made; an object in
    # record_fields was recorded, and `run --json` then failed with "object is not JSON
    # serialisable", naming no scheduler.
    class Telling(WorkStealing):
        name = "test-telling"

        def __init__(self, ctx, params, rng):
            super().__init__(ctx, params, rng)
            self.counters.update(counters)

        def record_fields(self):
            return fields

    m = load_machine("itrs-scaling-4")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=3))
    spec = JobSpec(t, Telling, Telling.resolve_params({}), 0, "j0")
    with pytest.raises(RuntimeError, match=f"^scheduler 'test-telling' of job 'j0': {message}"):
        Replay(m, [spec]).run()


def test_a_broken_contract_is_the_plugins_or_simscheds():
    from simsched.engine.controllers import Equi
    from simsched.errors import PluginError, contract_error
    from simsched.schedulers.ws import WorkStealing

    for builtin in (object.__new__(WorkStealing), object.__new__(Equi)):
        # A built-in policy's broken contract is simsched's bug: its traceback is kept.
        assert type(contract_error(builtin, "m")) is RuntimeError
    outside = type("Mine", (WorkStealing,), {"name": "test-mine", "aliases": ()})
    err = contract_error(object.__new__(outside), "m")
    assert isinstance(err, PluginError) and isinstance(err, RuntimeError) and str(err) == "m"


def test_a_victim_pool_not_led_by_the_jobs_cores_is_refused(tmp_path):
    """A ``victim_pool`` override must begin with ``ctx.cores`` in order (each core skips
    its own position): a reversed pool made cores steal from themselves, unchecked."""
    from simsched.errors import PluginError

    class Reversed(WorkStealing):
        name = "test-reversed"

        def victim_pool(self):
            return list(reversed(self.ctx.cores))

    m = load_machine("itrs-scaling-4")
    t = open_trace(make_trace(tmp_path / "t.sst", seed=2, depth=3))
    spec = JobSpec(t, Reversed, Reversed.resolve_params({}), 0, "j0")
    with pytest.raises(PluginError, match=r"^scheduler 'test-reversed': victim_pool\(\) gave "):
        Replay(m, [spec]).run()
