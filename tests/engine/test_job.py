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
